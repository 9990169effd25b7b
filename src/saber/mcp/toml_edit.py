"""Add and remove ``[[mcp.servers]]`` entries in ``saber.toml`` without touching the rest of the
file (comments, order and formatting are kept: tomlkit edits the document in place)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.exceptions import TOMLKitError

from saber.config import ConfigError
from saber.config.mcp import MCPServerConfig


def _load(path: Path) -> tomlkit.TOMLDocument:
    if not path.exists():
        return tomlkit.document()
    try:
        return tomlkit.parse(path.read_text(encoding="utf-8"))
    except (TOMLKitError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None


def _servers(doc: tomlkit.TOMLDocument) -> list[Any]:
    mcp = doc.get("mcp")
    if mcp is None:
        return []
    if not isinstance(mcp, dict):
        raise ConfigError("saber.toml: mcp must be a table")
    servers = mcp.get("servers", [])
    if not isinstance(servers, list):
        raise ConfigError("saber.toml: mcp.servers must be an array of tables ([[mcp.servers]])")
    return servers


def add_server(path: Path, config: MCPServerConfig) -> None:
    """Append ``config`` as a ``[[mcp.servers]]`` table; an existing name is an error."""
    doc = _load(path)
    if any(isinstance(s, dict) and s.get("name") == config.name for s in _servers(doc)):
        raise ConfigError(f"{path}: an MCP server named {config.name!r} is already configured")
    entry = tomlkit.table()
    defaults = MCPServerConfig.model_fields
    for key, value in config.model_dump().items():
        if key == "name" or value != defaults[key].get_default(call_default_factory=True):
            if isinstance(value, dict):
                inline = tomlkit.inline_table()
                inline.update(value)
                value = inline
            entry[key] = value
    entry.add(tomlkit.nl())
    if "mcp" not in doc:
        mcp = tomlkit.table(is_super_table=True)
        mcp.append("servers", tomlkit.aot())
        doc.append("mcp", mcp)
    mcp_table = doc["mcp"]
    assert isinstance(mcp_table, dict)
    if "servers" not in mcp_table:
        mcp_table.append("servers", tomlkit.aot())  # type: ignore[attr-defined]
    servers = mcp_table["servers"]
    servers.append(entry)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(tomlkit.dumps(doc), encoding="utf-8")


def remove_server(path: Path, name: str) -> bool:
    """Remove the ``[[mcp.servers]]`` entry named ``name``; False when there is none."""
    doc = _load(path)
    servers = _servers(doc)
    index = next((i for i, s in enumerate(servers) if isinstance(s, dict) and s.get("name") == name), None)
    if index is None:
        return False
    del servers[index]
    if not servers:  # an empty array of tables would be written as a stray `mcp.servers = []`
        mcp = doc["mcp"]
        assert isinstance(mcp, dict)
        del mcp["servers"]
        if not mcp:
            del doc["mcp"]
    path.write_text(tomlkit.dumps(doc), encoding="utf-8")
    return True
