"""/api/mcp/servers: list, add, test and remove MCP servers at run time; admins only with keys."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import httpx
from server_helpers import LiveServer

CHANGING_SERVER = Path(__file__).parents[1] / "mcp" / "changing_server.py"
ALICE = {"Authorization": "Bearer key-alice"}
BOB = {"Authorization": "Bearer key-bob"}


def marker_command(marker: Path) -> dict[str, object]:
    """A "server" whose only effect is to create ``marker`` (then it fails to speak MCP)."""
    return {"command": sys.executable, "args": ["-c", f"open({str(marker)!r}, 'w').close()"], "timeout": 2}


def test_add_test_and_remove_a_server_at_run_time(serve: Callable[..., LiveServer], tmp_path: Path) -> None:
    live = serve(home=tmp_path / "home", mcp={"startup_timeout": 30.0}, server={"keyless_admin": True})  # a busy machine starts Python slowly
    toml = tmp_path / "home" / "saber.toml"
    broken = {"name": "broken", "command": sys.executable, "args": ["-c", "print('not json'); import sys; sys.exit(3)"],
              "timeout": 2}
    working = {"name": "changing", "command": sys.executable, "args": [str(CHANGING_SERVER)], "timeout": 20}
    with httpx.Client(base_url=live.url, timeout=60) as client:
        assert client.get("/api/mcp/servers").json() == []
        typo = client.post("/api/mcp/servers", json={"name": "x", "comand": "y"})
        assert typo.status_code == 422 and "comand" in typo.json()["error"]["message"]
        failed = client.post("/api/mcp/servers", json=broken)  # saber.toml is written only once it has connected
        assert failed.status_code == 502 and failed.json()["error"]["code"] == "not_connected", failed.text
        assert "did not connect" in failed.json()["error"]["message"] and "not added" in failed.json()["error"]["message"]
        assert client.get("/api/mcp/servers").json() == [] and not toml.exists()
        added = client.post("/api/mcp/servers", json=working)
        assert added.status_code == 201 and added.json()["state"] == "ready", added.text
        listed = client.get("/api/mcp/servers").json()
        assert [s["name"] for s in listed] == ["changing"] and "add_double" in listed[0]["tools"]
        assert client.post("/api/mcp/servers", json=working).status_code == 409
        tested = client.post("/api/mcp/servers/changing/test").json()
        assert tested["ok"] is True and tested["error"] is None
        status = client.get("/api/status").json()
        assert [s["name"] for s in status["mcp"]] == ["changing"]
        assert 'name = "changing"' in toml.read_text(encoding="utf-8")
        assert client.delete("/api/mcp/servers/changing").json() == {"deleted": True}
        assert client.delete("/api/mcp/servers/changing").status_code == 404
        assert client.post("/api/mcp/servers/nope/test").status_code == 404
        assert "[[mcp.servers]]" not in toml.read_text(encoding="utf-8")


def test_a_server_without_keys_refuses_to_manage_mcp_servers_unless_told_to(serve: Callable[..., LiveServer],
                                                                            tmp_path: Path) -> None:
    live = serve(home=tmp_path / "home", mcp={"startup_timeout": 3.0})
    marker = tmp_path / "ran"
    with httpx.Client(base_url=live.url, timeout=60) as client:
        for method, path, body in (("GET", "", None), ("POST", "", {"name": "evil", **marker_command(marker)}),
                                   ("POST", "/evil/test", None), ("DELETE", "/evil", None)):
            r = client.request(method, "/api/mcp/servers" + path, json=body)
            assert r.status_code == 403, r.text
            assert "server.keyless_admin = true" in r.json()["error"]["message"]
    assert not marker.exists() and not (tmp_path / "home" / "saber.toml").exists()


def test_only_admins_manage_servers_when_keys_are_configured(serve: Callable[..., LiveServer]) -> None:
    live = serve(keys=True, server={"admins": ["alice"]})
    with httpx.Client(base_url=live.url, timeout=30) as client:
        assert client.get("/api/mcp/servers", headers=ALICE).status_code == 200
        refused = client.get("/api/mcp/servers", headers=BOB)
        assert refused.status_code == 403 and "admin" in refused.json()["error"]["message"]
        assert client.get("/api/mcp/servers").status_code == 401
