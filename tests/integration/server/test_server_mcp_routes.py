"""/api/mcp/servers: list, add, test and remove MCP servers at run time; admins only with keys."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import httpx
from server_helpers import LiveServer

ALICE = {"Authorization": "Bearer key-alice"}
BOB = {"Authorization": "Bearer key-bob"}


def test_add_test_and_remove_a_server_at_run_time(serve: Callable[..., LiveServer], tmp_path: Path) -> None:
    live = serve(home=tmp_path / "home", mcp_startup_timeout=3.0)
    broken = {"name": "broken", "command": sys.executable, "args": ["-c", "print('not json'); import sys; sys.exit(3)"],
              "timeout": 2}
    with httpx.Client(base_url=live.url, timeout=60) as client:
        assert client.get("/api/mcp/servers").json() == []
        typo = client.post("/api/mcp/servers", json={"name": "x", "comand": "y"})
        assert typo.status_code == 422 and "comand" in typo.json()["error"]["message"]
        added = client.post("/api/mcp/servers", json=broken)
        assert added.status_code == 201, added.text
        listed = client.get("/api/mcp/servers").json()
        assert [s["name"] for s in listed] == ["broken"] and listed[0]["state"] != "ready"
        assert client.post("/api/mcp/servers", json=broken).status_code == 409
        tested = client.post("/api/mcp/servers/broken/test").json()
        assert tested["ok"] is False and tested["error"]
        status = client.get("/api/status").json()
        assert [s["name"] for s in status["mcp"]] == ["broken"]
        assert "[[mcp.servers]]" in (tmp_path / "home" / "saber.toml").read_text(encoding="utf-8")
        assert client.delete("/api/mcp/servers/broken").json() == {"deleted": True}
        assert client.delete("/api/mcp/servers/broken").status_code == 404
        assert client.post("/api/mcp/servers/nope/test").status_code == 404
        assert "[[mcp.servers]]" not in (tmp_path / "home" / "saber.toml").read_text(encoding="utf-8")


def test_only_admins_manage_servers_when_keys_are_configured(serve: Callable[..., LiveServer]) -> None:
    live = serve(keys=True, server_admins=["alice"])
    with httpx.Client(base_url=live.url, timeout=30) as client:
        assert client.get("/api/mcp/servers", headers=ALICE).status_code == 200
        refused = client.get("/api/mcp/servers", headers=BOB)
        assert refused.status_code == 403 and "admin" in refused.json()["error"]["message"]
        assert client.get("/api/mcp/servers").status_code == 401
