"""What a model wrote as a tool's name → the registry's name for it.

Models served through OpenAI-style templates sometimes prefix a tool with the ``functions.``
namespace the template showed them. MCP tools may really be called ``functions.x`` (and contain
dots), so the prefix is removed only when the stripped name exists and the full one does not.
"""

from __future__ import annotations

from collections.abc import Container

_NAMESPACES = ("functions.",)


def resolve_name(name: str, known: Container[str]) -> str:
    """``name`` itself when ``known`` has it; else without a namespace prefix when that is known;
    else ``name`` unchanged (validation then names it as unknown)."""
    if name in known:
        return name
    for prefix in _NAMESPACES:
        if name.startswith(prefix) and name[len(prefix):] in known:
            return name[len(prefix):]
    return name
