"""Helpers for the MCP integration tests (imported by the tests and their conftest)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from saber.config import Settings
from saber.config.mcp import MCPServerConfig

CLOSED = "http://127.0.0.1:9"


def time_config(command: str, name: str = "time", **extra: Any) -> MCPServerConfig:
    return MCPServerConfig(name=name, command=command, args=["--local-timezone", "Asia/Shanghai"], **extra)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def children_running(fragment: str) -> list[int]:
    """Pids of this process's children whose command line contains ``fragment``."""
    me = os.getpid()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, ValueError, IndexError):
            continue
        if ppid == me and fragment in cmdline:
            found.append(int(entry.name))
    return found


def signal_server(fragment: str, sig: signal.Signals) -> int:
    pids = children_running(fragment)
    assert len(pids) == 1, f"expected one {fragment} process, found {pids}"
    os.kill(pids[0], sig)
    return pids[0]


def settings_for(home: Path, servers: list[MCPServerConfig], **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "home": home,
        "search": {"backend": "none"},
        "weather": {"geocoding_url": f"{CLOSED}/v1/search", "forecast_url": f"{CLOSED}/v1/forecast"},
        "graph": {"retry_delay": 0.0, "max_attempts": 2},
        "mcp": {"servers": servers, "startup_timeout": 20.0},
    }
    for section, items in overrides.items():  # a section's keys over the defaults above, one by one
        values[section] = {**values.get(section, {}), **items} if isinstance(items, dict) else items
    return Settings(**values)


def python_server(code: str) -> MCPServerConfig:
    """A 'server' that is this Python running ``code`` (one that exits at start-up, say)."""
    return MCPServerConfig(name="broken", command=sys.executable, args=["-c", code])




def wait_listening(port: int, proc: subprocess.Popen[str]) -> None:
    """Until something accepts connections on ``port``; an error with stderr if ``proc`` exits first."""
    for _ in range(600):
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited: {proc.stderr.read() if proc.stderr else ''}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"nothing listened on port {port} within 60 s")
