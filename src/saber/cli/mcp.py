"""``saber mcp list|add|rm|test|serve`` (mounted by the main CLI as ``app.add_typer(mcp_app, name="mcp")``)."""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from saber.cli.output import CLIError, UsageError

if TYPE_CHECKING:
    from saber.config import Settings
    from saber.server.auth import KeyRing

mcp_app = typer.Typer(help="Connect MCP servers (their tools join Saber's) and serve Saber over MCP.",
                      no_args_is_help=True)
out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)


class MCPCommandError(UsageError):
    """A one-line error (the main CLI prints it as ``saber: error: …``, exit code 2)."""


def _settings() -> Settings:
    from saber.config import Settings

    return Settings.load()


def config_path(home: object) -> Any:
    from saber.config import config_path as path_of

    return path_of(home)


def _pairs(values: list[str] | None, option: str) -> dict[str, str]:
    out_: dict[str, str] = {}
    for item in values or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise MCPCommandError(f"{option} {item!r}: use KEY=VALUE")
        out_[key.strip()] = value
    return out_


@mcp_app.command("list")
def list_servers(as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """Connect the configured servers and show their state and tools."""
    settings = _settings()
    status = asyncio.run(_connect_all(settings))
    if as_json:
        out.print(json.dumps(status, ensure_ascii=False, indent=2), markup=False)
        return
    if not status:
        out.print(f"no MCP servers in {config_path(settings.home)} (add one: saber mcp add NAME -- COMMAND ARGS...)",
                  markup=False)
        return
    table = Table("server", "transport", "state", "tools", "target / error")
    for s in status:
        colour = {"ready": "green", "disabled": "dim"}.get(s["state"], "red")
        detail = s["error"] or s["target"]
        table.add_row(s["name"], s["transport"], f"[{colour}]{s['state']}[/]", escape(", ".join(s["tools"]) or "—"),
                      escape(detail))
    out.print(table)


async def _connect_all(settings: Settings) -> list[dict[str, Any]]:
    from saber.mcp.manager import MCPManager
    from saber.tools.builtin import builtin_tools
    from saber.tools.registry import ToolRegistry

    manager = MCPManager.from_settings(settings, ToolRegistry(builtin_tools(settings)))
    try:
        return await manager.start()
    finally:
        await manager.aclose()


@mcp_app.command("add")
def add(
    name: Annotated[str, typer.Argument(help="A name for the server (letters, digits, _ - .).")],
    command: Annotated[list[str] | None, typer.Argument(help="After --: the command that starts the server, and its arguments.")] = None,
    url: Annotated[str | None, typer.Option("--url", help="A streamable HTTP server's URL instead of a command.")] = None,
    header: Annotated[list[str] | None, typer.Option("--header", help="KEY=VALUE sent with every HTTP request.")] = None,
    env: Annotated[list[str] | None, typer.Option("--env", help="KEY=VALUE for the server's environment.")] = None,
    cwd: Annotated[str | None, typer.Option("--cwd", help="Working folder of the server process.")] = None,
    prefix: Annotated[str, typer.Option("--prefix", help="Put before each of its tool names.")] = "",
    tool: Annotated[list[str] | None, typer.Option("--tool", help="Only this tool (repeat for more).")] = None,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds a tool call may take.")] = 30.0,
    disabled: Annotated[bool, typer.Option("--disabled", help="Add it switched off.")] = False,
) -> None:
    """Add a server to saber.toml: `saber mcp add NAME -- COMMAND ARGS...` or `saber mcp add NAME --url URL`."""
    from pydantic import ValidationError

    from saber.config.mcp import MCPServerConfig
    from saber.mcp.toml_edit import add_server

    settings = _settings()
    if command and url:
        raise MCPCommandError("give a command (after --) or --url, not both")
    if not command and not url:
        raise MCPCommandError("give the command after -- (saber mcp add NAME -- COMMAND ARGS...) or --url URL")
    try:
        config = MCPServerConfig(
            name=name, command=command[0] if command else None, args=list(command[1:]) if command else [],
            url=url, headers=_pairs(header, "--header"), env=_pairs(env, "--env"), cwd=cwd, prefix=prefix,
            tools=list(tool) if tool else None, timeout=timeout, enabled=not disabled,
        )
    except ValidationError as exc:
        raise MCPCommandError("; ".join(str(e["msg"]).removeprefix("Value error, ") for e in exc.errors())) from None
    if any(s.name == name for s in settings.mcp.servers):
        raise MCPCommandError(f"an MCP server named {name!r} is already configured")
    path = config_path(settings.home)
    add_server(path, config)
    out.print(f"added {name} ({config.describe()}) to {path}; check it with: saber mcp test {name}", markup=False)


@mcp_app.command("rm")
def remove(name: Annotated[str, typer.Argument(help="The server to remove.")]) -> None:
    """Remove a server from saber.toml."""
    from saber.mcp.toml_edit import remove_server

    settings = _settings()
    path = config_path(settings.home)
    if not remove_server(path, name):
        known = ", ".join(s.name for s in settings.mcp.servers) or "none"
        raise MCPCommandError(f"no MCP server named {name!r} in {path} (configured: {known})")
    out.print(f"removed {name} from {path}", markup=False)


@mcp_app.command("test")
def test(name: Annotated[str, typer.Argument(help="The server to try.")]) -> None:
    """Start the server, list its tools, and stop it; exit code 1 when it does not work."""
    from saber.mcp.manager import probe

    settings = _settings()
    config = next((s for s in settings.mcp.servers if s.name == name), None)
    if config is None:
        known = ", ".join(s.name for s in settings.mcp.servers) or "none"
        raise MCPCommandError(f"no MCP server named {name!r} (configured: {known})")
    report = asyncio.run(probe(config, startup=settings.mcp.startup_timeout))
    if not report["ok"]:
        err.print(f"saber: error: MCP server {name} ({config.describe()}): {report['error']}", markup=False)
        raise typer.Exit(1)
    out.print(f"{name}: ok — {report['server'] or 'server'} with {len(report['tools'])} tool(s)", markup=False)
    for t in report["tools"]:
        out.print(f"  {t['name']}: {t['description']}", markup=False)


@mcp_app.command("serve")
def serve(
    http: Annotated[str | None, typer.Option("--http", help="HOST:PORT to serve streamable HTTP at /mcp (default: stdio).")] = None,
    no_mcp_tools: Annotated[bool, typer.Option("--no-mcp-tools", help="Do not pass on the tools of Saber's own MCP servers.")] = False,
    insecure_no_auth: Annotated[bool, typer.Option("--insecure-no-auth",
                                                   help="With --http: listen on a non-loopback address without API keys.")] = False,
) -> None:
    """Serve Saber's tools and `saber_ask` to MCP hosts (Claude Desktop, Cursor, other agents).

    Over --http, the API keys of `saber serve` apply: with keys, every request needs
    `Authorization: Bearer <key>`; without, only a loopback address is served."""
    from saber.server.mcp_server import serve_http, serve_stdio

    address = _address(http) if http else None
    settings = _settings()
    keys = _http_keys(settings, address[0], insecure_no_auth) if address is not None else None

    async def run() -> None:
        from saber.agent import Agent

        agent = Agent(settings)
        try:
            await agent.start()
            if address is None:
                await serve_stdio(agent, include_mcp_tools=not no_mcp_tools)
            else:
                def listening() -> None:
                    access = "API keys" if keys is not None and keys.enabled else "local, no keys"
                    err.print(f"saber: serving MCP at http://{address[0]}:{address[1]}/mcp ({access})", markup=False)

                try:
                    await serve_http(agent, address[0], address[1], include_mcp_tools=not no_mcp_tools, keys=keys,
                                     on_listening=listening)
                except OSError as exc:  # the port is taken, the address is not this machine's
                    raise CLIError(str(exc)) from None
        finally:
            await agent.aclose()

    asyncio.run(run())


def _http_keys(settings: Settings, host: str, insecure_no_auth: bool) -> KeyRing:
    """The API keys of ``saber serve``, and its rule: no keys, no address other than loopback."""
    from saber.cli.serve import check_host
    from saber.server.auth import KeyRing

    keys = KeyRing.from_settings(settings)
    check_host(host, keys, insecure_no_auth)
    return keys


def _address(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise MCPCommandError(f"--http {text!r}: use HOST:PORT, e.g. 127.0.0.1:8765")
    return host.strip("[]"), int(port)
