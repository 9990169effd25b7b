"""What routes take from the app: the agent, the run manager, the settings, the caller.

They are ``async def``: FastAPI runs a plain ``def`` dependency in a worker thread, a hand-off
per dependency per request (three for a chat request) for what is an attribute read."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Query, Request

from saber.agent import Agent
from saber.config import Settings
from saber.runs.manager import RunManager
from saber.server.auth import caller
from saber.server.errors import ApiError


async def get_agent(request: Request) -> Agent:
    return _agent(request)


def _agent(request: Request) -> Agent:
    agent: Agent | None = getattr(request.app.state, "agent", None)
    if agent is None:
        raise ApiError(503, "not_ready", "the agent is still starting")
    return agent


async def get_manager(request: Request) -> RunManager:
    _agent(request)
    manager: RunManager = request.app.state.runs
    return manager


async def get_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


async def current_user(
    request: Request,
    user_id: Annotated[str | None, Query(min_length=1, max_length=128,
                                         description="Local mode only: act as this user.")] = None,
) -> str:
    return caller(request, user_id)


AgentDep = Annotated[Agent, Depends(get_agent)]
RunsDep = Annotated[RunManager, Depends(get_manager)]
SettingsDep = Annotated[Settings, Depends(get_settings)]
UserDep = Annotated[str, Depends(current_user)]
