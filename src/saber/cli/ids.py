"""Ids as git shows them: any unique prefix is accepted, listings show the shortest unique prefix."""

from __future__ import annotations

from collections.abc import Iterable

from saber.cli.output import CLIError

MIN_SHORT = 8


def resolve(prefix: str, known: Iterable[str], what: str) -> str:
    """The one id in ``known`` that is ``prefix`` or starts with it; CLIError naming the problem."""
    wanted = prefix.strip()
    ids = list(dict.fromkeys(known))
    if not wanted:
        raise CLIError(f"empty {what} id", 2)
    if wanted in ids:
        return wanted
    matches = [i for i in ids if i.startswith(wanted)]
    if not matches:
        raise CLIError(f"no {what} with id {wanted!r}")
    if len(matches) > 1:
        shown = ", ".join(sorted(matches)[:5]) + (", …" if len(matches) > 5 else "")
        raise CLIError(f"{what} id {wanted!r} is ambiguous: it starts {len(matches)} ids ({shown}); give more characters", 2)
    return matches[0]


def shortest_unique(ids: Iterable[str], minimum: int = MIN_SHORT) -> dict[str, str]:
    """Each id's shortest prefix (at least ``minimum`` characters) that no other id starts with."""
    ordered = sorted(set(ids))
    out: dict[str, str] = {}
    for n, current in enumerate(ordered):
        common = 0
        for other in (ordered[n - 1] if n else None, ordered[n + 1] if n + 1 < len(ordered) else None):
            if other is None:
                continue
            k = 0
            while k < min(len(current), len(other)) and current[k] == other[k]:
                k += 1
            common = max(common, k)
        out[current] = current[:max(minimum, common + 1)]
    return out
