"""One ``[[mcp.servers]]`` entry of ``saber.toml``: how to reach an MCP server and what to take from it.

Kept free of the MCP SDK so that reading settings never imports it.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")


class MCPServerConfig(BaseModel):
    """A server started as a subprocess (``command``) or reached over streamable HTTP (``url``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    """Identifies the server in the CLI, the logs and ``server__tool`` names."""
    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    """Added to the SDK's safe default environment (PATH, HOME …) of the subprocess."""
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    """Sent with every HTTP request, e.g. ``Authorization = "Bearer …"``."""
    enabled: bool = True
    timeout: float = Field(30.0, gt=0)
    """Seconds one tool call may take before it fails (retryably)."""
    tools: list[str] | None = None
    """Allow-list of the server's tool names; all of them when unset."""
    prefix: str = ""
    """Put before each of the server's tool names (``prefix = "time_"`` → ``time_get_current_time``)."""

    @model_validator(mode="after")
    def _one_transport(self) -> MCPServerConfig:
        if not _NAME.match(self.name):
            raise ValueError(f"server name {self.name!r}: use letters, digits, '_', '-' or '.' (at most 63)")
        if bool(self.command) == bool(self.url):
            raise ValueError(f"server {self.name!r}: give either command (a subprocess) or url (streamable HTTP)")
        if self.url and not self.url.startswith(("http://", "https://")):
            raise ValueError(f"server {self.name!r}: url must start with http:// or https://")
        return self

    @property
    def transport(self) -> str:
        return "stdio" if self.command else "http"

    def masked(self) -> dict[str, Any]:
        """The entry as a dict, header and environment values (tokens, keys) shown as ``sk-…wxyz``."""
        data = self.model_dump()
        for key in ("headers", "env"):
            data[key] = {k: _mask(v) for k, v in data[key].items()}
        return data

    def describe(self) -> str:
        """``mcp-server-time --local-timezone X`` or the URL (headers left out: they hold secrets)."""
        if self.url:
            return self.url
        return " ".join(" ".join([self.command or "", *self.args]).split())  # one line, whatever the arguments hold


def _mask(value: str) -> str:
    return f"{value[:3]}…{value[-4:]}" if len(value) > 12 else "***"


KNOWN_KEYS = frozenset(MCPServerConfig.model_fields)


def check_server_entries(value: Any) -> Any:
    """One-line errors for the usual mistakes in ``[[mcp.servers]]``, before pydantic's own checks:
    an unknown key (named), a missing name, two servers with one name."""
    if isinstance(value, dict):
        raise ValueError("write each server as [[mcp.servers]] (double brackets: an array of tables), not [mcp.servers]")
    if not isinstance(value, list):
        return value
    seen: set[str] = set()
    for i, entry in enumerate(value, start=1):
        if isinstance(entry, MCPServerConfig):
            entry = entry.model_dump()
        if not isinstance(entry, dict):
            raise ValueError(f"[[mcp.servers]] entry {i} must be a table, got {type(entry).__name__}")
        label = f"[[mcp.servers]] entry {i}" + (f" ({entry['name']!r})" if isinstance(entry.get("name"), str) else "")
        unknown = sorted(set(entry) - KNOWN_KEYS)
        if unknown:
            raise ValueError(f"{label}: unknown key(s) {', '.join(unknown)} (known: {', '.join(sorted(KNOWN_KEYS))})")
        name = entry.get("name")
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"{label}: name is required")
        if name in seen:
            raise ValueError(f"{label}: another server is already named {name!r}")
        seen.add(name)
    return value
