"""MCP servers at run time: list, add, remove and test them. With API keys, only the users named
in ``server.admins`` may; without, only when ``server.keyless_admin`` is set. A server added here
is written to ``saber.toml`` once it has connected (one that does not is not added)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from saber.config import Settings, config_path
from saber.mcp.manager import NotConnected
from saber.server.auth import authenticate
from saber.server.deps import AgentDep, SettingsDep
from saber.server.errors import ERROR_RESPONSES, ApiError, ErrorBody, not_found, shown

router = APIRouter(prefix="/api/mcp/servers", tags=["mcp"], responses=ERROR_RESPONSES)


KEYLESS_REFUSED = ("managing MCP servers over HTTP is off on a server without API keys (whatever reaches its port "
                   "could start commands): set server.keyless_admin = true in saber.toml (or "
                   "SABER_SERVER_KEYLESS_ADMIN=true) to allow it, configure API keys and name admins in "
                   "server.admins, or use `saber mcp add` on the server")


def _admin(request: Request, settings: Settings) -> None:
    user = authenticate(request)
    if user is None and not settings.server.keyless_admin:
        raise ApiError(403, "forbidden", KEYLESS_REFUSED)
    if user is not None and user not in settings.server.admins:
        raise ApiError(403, "forbidden", "managing MCP servers needs an admin key (server.admins)")


@router.get("", summary="The MCP servers: state, error, tools")
async def list_servers(request: Request, agent: AgentDep, settings: SettingsDep) -> list[dict[str, Any]]:
    _admin(request, settings)
    return agent.mcp.list()


@router.post("", status_code=201, summary="Add an MCP server (a [[mcp.servers]] entry as JSON) and connect it",
             responses={502: {"model": ErrorBody, "description": "it did not connect: not added, nothing saved"}})
async def add_server(body: dict[str, Any], request: Request, agent: AgentDep, settings: SettingsDep) -> dict[str, Any]:
    from pydantic import ValidationError

    from saber.config.mcp import MCPServerConfig

    _admin(request, settings)
    try:
        config = MCPServerConfig.model_validate(body)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'body'}: {e['msg']}" for e in exc.errors())
        raise ApiError(422, "invalid_server", problems) from None
    try:
        return await agent.mcp.add(config, save_to=config_path(settings.home))
    except NotConnected as exc:
        raise ApiError(502, "not_connected", str(exc)) from None
    except ValueError as exc:
        raise ApiError(409, "conflict", str(exc)) from None


@router.delete("/{name}", summary="Disconnect an MCP server and drop its tools")
async def remove_server(name: str, request: Request, agent: AgentDep, settings: SettingsDep) -> dict[str, bool]:
    _admin(request, settings)
    if not await agent.mcp.remove(name, save_to=config_path(settings.home)):
        raise not_found(f"MCP server {shown(name)}")
    return {"deleted": True}


@router.post("/{name}/test", summary="Connect to a server on its own, list its tools, disconnect")
async def test_server(name: str, request: Request, agent: AgentDep, settings: SettingsDep) -> dict[str, Any]:
    _admin(request, settings)
    try:
        return await agent.mcp.test(name)
    except KeyError:
        raise not_found(f"MCP server {shown(name)}") from None
