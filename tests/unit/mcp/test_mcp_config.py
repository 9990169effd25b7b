"""[[mcp.servers]] in saber.toml and SABER_MCP_SERVERS: what is accepted, and one-line errors naming the problem."""

from __future__ import annotations

from pathlib import Path

import pytest

from saber.config import ConfigError, Settings
from saber.config.mcp import MCPServerConfig
from saber.mcp.toml_edit import add_server, remove_server


def load(home: Path, text: str) -> Settings:
    (home / "saber.toml").write_text(text, encoding="utf-8")
    return Settings.load(home=home)


def test_the_issues_example_loads(tmp_path: Path) -> None:
    settings = load(tmp_path, '''
[[mcp.servers]]
name = "time"
command = "mcp-server-time"
args = ["--local-timezone", "Asia/Shanghai"]

[[mcp.servers]]
name = "docs"
url = "http://127.0.0.1:9000/mcp"
headers = { Authorization = "Bearer abc" }
tools = ["search"]
prefix = "docs_"
timeout = 5
enabled = false
''')
    time, docs = settings.mcp.servers
    assert (time.name, time.transport, time.args) == ("time", "stdio", ["--local-timezone", "Asia/Shanghai"])
    assert (docs.transport, docs.headers, docs.tools, docs.prefix, docs.timeout, docs.enabled) == (
        "http", {"Authorization": "Bearer abc"}, ["search"], "docs_", 5.0, False)
    assert docs.describe() == "http://127.0.0.1:9000/mcp"  # headers (secrets) are never shown
    assert time.describe() == "mcp-server-time --local-timezone Asia/Shanghai"


def test_a_command_is_described_on_one_line() -> None:
    from saber.config.mcp import MCPServerConfig

    server = MCPServerConfig(name="x", command="python", args=["-c", "import sys\nprint('hi')\n  sys.exit(1)"])
    assert server.describe() == "python -c import sys print('hi') sys.exit(1)"


@pytest.mark.parametrize(("entry", "message"), [
    ('name = "t"\ncommand = "x"\ncomand = "typo"', "[[mcp.servers]] entry 1 ('t'): unknown key(s) comand"),
    ('command = "x"', "entry 1: name is required"),
    ('name = "t"', "give either command (a subprocess) or url"),
    ('name = "t"\ncommand = "x"\nurl = "http://h"', "give either command"),
    ('name = "t"\nurl = "ws://h"', "url must start with http:// or https://"),
    ('name = "a b"\ncommand = "x"', "server name 'a b'"),
    ('name = "t"\ncommand = "x"\ntimeout = 0', "timeout"),
])
def test_mistakes_are_one_line_errors_naming_them(tmp_path: Path, entry: str, message: str) -> None:
    with pytest.raises(ConfigError) as error:
        load(tmp_path, f"[[mcp.servers]]\n{entry}\n")
    assert message in str(error.value) and "\n" not in str(error.value)


def test_single_brackets_are_explained(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"write each server as \[\[mcp.servers\]\]"):
        load(tmp_path, '[mcp.servers]\nname = "t"\ncommand = "x"\n')


def test_two_servers_with_one_name(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="another server is already named 't'"):
        load(tmp_path, '[[mcp.servers]]\nname = "t"\ncommand = "x"\n[[mcp.servers]]\nname = "t"\ncommand = "y"\n')


def test_servers_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SABER_MCP_SERVERS", '[{"name": "e", "url": "https://example.test/mcp"}]')
    assert [s.name for s in Settings.load(home=tmp_path).mcp.servers] == ["e"]


def test_add_and_remove_keep_the_rest_of_the_file(tmp_path: Path) -> None:
    path = tmp_path / "saber.toml"
    original = '# comment kept\n[llm]\nmodel = "m"  # trailing comment\n\n[[mcp.servers]]\nname = "a"\ncommand = "x"\n\n[rag]\nchild_size = 300\n'
    path.write_text(original, encoding="utf-8")
    add_server(path, MCPServerConfig(name="docs", url="http://h/mcp", headers={"Authorization": "Bearer 令牌"}))
    settings = Settings.load(home=tmp_path)
    assert [s.name for s in settings.mcp.servers] == ["a", "docs"]
    assert settings.mcp.servers[1].headers == {"Authorization": "Bearer 令牌"} and settings.rag.child_size == 300
    text = path.read_text(encoding="utf-8")
    assert "# comment kept" in text and "# trailing comment" in text
    with pytest.raises(ConfigError, match="already configured"):
        add_server(path, MCPServerConfig(name="docs", command="y"))
    assert remove_server(path, "docs") and not remove_server(path, "docs")
    assert path.read_text(encoding="utf-8") == original


def test_add_to_a_missing_file_creates_it(tmp_path: Path) -> None:
    path = tmp_path / "new" / "saber.toml"
    add_server(path, MCPServerConfig(name="t", command="mcp-server-time", args=["--local-timezone", "UTC"], tools=["get_current_time"]))
    settings = Settings.load(home=path.parent)
    assert settings.mcp.servers[0].tools == ["get_current_time"]
    assert "timeout" not in path.read_text(encoding="utf-8")  # defaults are not written


async def test_the_service_adds_and_removes_servers_and_saves_them(tmp_path: Path) -> None:
    from saber.mcp.manager import MCPManager
    from saber.tools.registry import ToolRegistry

    path = tmp_path / "saber.toml"
    manager = MCPManager(ToolRegistry())
    status = await manager.add(MCPServerConfig(name="later", command="mcp-server-time", enabled=False), save_to=path)
    assert status["state"] == "disabled" and [s["name"] for s in manager.list()] == ["later"]
    assert [s.name for s in Settings.load(home=tmp_path).mcp.servers] == ["later"]
    with pytest.raises(ValueError, match="already exists"):
        await manager.add(MCPServerConfig(name="later", command="x"))
    assert await manager.remove("later", save_to=path) and not await manager.remove("later")
    assert manager.list() == [] and Settings.load(home=tmp_path).mcp.servers == []
    await manager.aclose()


def test_saber_config_masks_header_and_env_secrets(tmp_path: Path) -> None:
    import json

    settings = load(tmp_path, '[[mcp.servers]]\nname = "docs"\nurl = "http://h/mcp"\n'
                              'headers = { Authorization = "Bearer sk-secret-token-12345" }\nenv = { KEY = "short" }\n')
    shown = json.dumps(settings.masked())  # serialisable, for `saber config --json`
    assert "sk-secret-token" not in shown and "short" not in shown
    assert settings.masked()["mcp"]["servers"][0]["headers"] == {"Authorization": "Bea…2345"}
