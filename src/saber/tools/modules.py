"""Custom tools every process registers: the ``tools.modules`` setting and ``saber.tools`` entry points.

In the distributed mode a request may run on any worker, so a custom tool must exist in every
``saber`` process, not only in the script that built an ``Agent``. Each named module is imported
and every ``@tool`` at its top level is taken; an entry point of the ``saber.tools`` group may
name a module, a ``Tool`` or a list of them.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from importlib.metadata import entry_points
from types import ModuleType
from typing import Any

from saber.config import ConfigError
from saber.tools.base import Tool

ENTRY_POINT_GROUP = "saber.tools"


def _tools_in(value: Any) -> list[Tool]:
    if isinstance(value, Tool):
        return [value]
    if isinstance(value, ModuleType):
        return [v for v in vars(value).values() if isinstance(v, Tool)]
    if isinstance(value, (list, tuple)):
        return [v for v in value if isinstance(v, Tool)]
    return []


def import_tool_module(name: str) -> list[Tool]:
    """The ``@tool`` functions of module ``name``; a ConfigError naming it when it cannot be imported."""
    try:
        module = importlib.import_module(name.strip())
    except Exception as exc:  # any failure of the user's module is a configuration problem, said in one line
        raise ConfigError(f"tools.modules: cannot import {name!r}: {type(exc).__name__}: {exc}") from None
    found = _tools_in(module)
    if not found:
        raise ConfigError(f"tools.modules: module {name!r} defines no @tool function")
    return found


def configured_tools(modules: Iterable[str]) -> list[Tool]:
    """The tools of every module in ``modules``, then of every ``saber.tools`` entry point."""
    out: list[Tool] = []
    for name in modules:
        out.extend(import_tool_module(name))
    for point in entry_points(group=ENTRY_POINT_GROUP):
        try:
            loaded = point.load()
        except Exception as exc:
            raise ConfigError(f"entry point {point.name!r} ({point.value}) of {ENTRY_POINT_GROUP}: cannot load: "
                              f"{type(exc).__name__}: {exc}") from None
        found = _tools_in(loaded)
        if not found:
            raise ConfigError(f"entry point {point.name!r} ({point.value}) of {ENTRY_POINT_GROUP} names no @tool")
        out.extend(found)
    return out
