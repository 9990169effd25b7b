"""Place arguments with a role, checked against the rules' reading of the request.

``planner.grounding`` checks that a place argument (``city``, ``timezone``) is one the request
names. A tool with two places in different roles — ``convert_time``'s ``from_timezone`` and
``to_timezone`` — can be called with both places named and still be wrong: swapped, or converting
to the wrong one. When the rules read the same argument from the query, the model's value must be
the same place (any of its names, or a zone that keeps the same clock), and a ``time`` the same
time of day ("15:00" for "下午3点"); else the rules' value is the repair. A value either side cannot
read offline is left to the tool.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime

from saber.graph.node import Node
from saber.planner.grounding import GroundingContext
from saber.tools.builtin.places import resolve_offline, zone_info
from saber.tools.builtin.wallclock import ClockTimeError, find_clock_time

_CHECKED_ELSEWHERE = frozenset({"timezone", "tz", "city", "location", "place"})
"""What ``planner.grounding`` checks already."""
_ROLE_SUFFIXES = ("timezone", "_tz", "city", "place", "location")


def check_roles(node: Node, context: GroundingContext) -> tuple[Node, list[str]]:
    """``node`` with each role-place argument the rules read differently replaced by theirs, and a
    warning for each (worded like the grounding's: "…; the rules' '伦敦' used instead")."""
    rule = next((n for n in context.rule_nodes if n.tool == node.tool), None)
    if rule is None:
        return node, []
    params = dict(node.params)
    warnings: list[str] = []
    for key, value in node.params.items():
        wanted = rule.params.get(key)
        if not isinstance(value, str) or not isinstance(wanted, str):
            continue
        if key == "time" and _different_times(value, wanted):
            params[key] = wanted
            warnings.append(f"{node.id} {node.tool}: time={value!r} is not the time the request gives ({wanted}); "
                            f"the rules' {wanted!r} used instead")
        elif key not in _CHECKED_ELSEWHERE and key.endswith(_ROLE_SUFFIXES) and _different_places(value, wanted):
            params[key] = wanted
            warnings.append(f"{node.id} {node.tool}: {key}={value!r} is not the place the request gives for "
                            f"{key} ({wanted}); the rules' {wanted!r} used instead")
    return (dataclasses.replace(node, params=params) if warnings else node), warnings


def _different_times(a: str, b: str) -> bool:
    """Two times of day that both read, and differ ("14:00" for "下午3点"); "15:00" and "3 pm" are the same."""
    try:
        first, second = find_clock_time(a), find_clock_time(b)
    except ClockTimeError:  # the tool names what is wrong with it
        return False
    return first is not None and second is not None and (first.hour, first.minute) != (second.hour, second.minute)


def _different_places(a: str, b: str) -> bool:
    first, second = resolve_offline(a), resolve_offline(b)
    if first is None or second is None or first.timezone is None or second.timezone is None:
        return False
    if first.name == second.name or first.timezone == second.timezone:
        return False
    return any(datetime(2026, month, 15, 12, tzinfo=zone_info(first.timezone)).utcoffset()
               != datetime(2026, month, 15, 12, tzinfo=zone_info(second.timezone)).utcoffset() for month in (1, 7))
