"""``RunRequest``: a request as data, one type from the HTTP body through the run queue to the worker.

A client's body is validated once, at the edge (``saber.server.schemas.ChatRequest`` is a
``RunInput`` with the HTTP-only fields beside it); the route turns it into the ``RunRequest`` the
run manager carries (``TaskRun.request``). The in-process backend starts the agent from it
(``agent_stream``); the distributed mode stores its JSON in the run queue, and the worker that
takes the run reads it back through the same model, so a row the worker cannot read (written by
an older version, or edited by hand) is refused by the same validation that answers 422 at the
API node, and failed with that reason instead of being retried.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError

from saber.llm.types import Message

if TYPE_CHECKING:
    from saber.agent import Agent
    from saber.events import Event

Mode = Literal["chat", "tool", "rag", "react"]


class HistoryTurn(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    role: Literal["system", "user", "assistant", "tool"]
    content: str


class RunInput(BaseModel):
    """What a client asks the agent: the fields an HTTP body and a queued run share."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    message: str = Field(default="", description="The query.")
    mode: Mode | None = Field(default=None, description="Force a mode; routed by rules when absent.")
    selected_tools: list[str] | None = Field(default=None, description="Only these tools may be used.")
    use_rag: StrictBool | None = None

    def run_request(self, history: list[HistoryTurn] | None = None) -> RunRequest:
        """This input as the request a run carries (already validated: nothing is checked again)."""
        return RunRequest.model_construct(message=self.message, mode=self.mode, selected_tools=self.selected_tools,
                                          use_rag=self.use_rag, history=history, after=0)


class RunRequest(RunInput):
    """What a run needs to start: the client's input, the conversation an OpenAI-style client sent
    before it, and where its events follow the task's earlier ones (a resume needs no input: the
    checkpoint has it)."""

    history: list[HistoryTurn] | None = None
    after: int = Field(default=0, ge=0)
    """The sequence number of the task's last event before this run (a resumed task's earlier
    runs): this run's events follow it."""

    @classmethod
    def read(cls, data: Mapping[str, Any] | str | RunRequest | None) -> RunRequest:
        """The request from its stored form (``stored``'s JSON text, or that JSON parsed); a
        ``ValueError`` naming what is wrong otherwise."""
        if isinstance(data, RunRequest):
            return data
        if isinstance(data, str):
            try:
                data = json.loads(data)
            except ValueError:
                raise ValueError("malformed run request: not JSON") from None
        if data is not None and not isinstance(data, Mapping):
            raise ValueError(f"malformed run request: a JSON object is needed, not {type(data).__name__}")
        try:
            return cls.model_validate(dict(data or {}))
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'request'}: {e['msg']}"
                                 for e in exc.errors(include_url=False))
            raise ValueError(f"malformed run request: {problems}") from None

    def stored(self) -> str:
        """The JSON text the run queue keeps (``read`` takes it back once parsed)."""
        return self.model_dump_json()


def agent_stream(agent: Agent, request: RunRequest, *, task_id: str, user_id: str, resume: bool) -> AsyncIterator[Event]:
    """The agent's events for ``request``: a new run of its message, or (``resume``) the task's
    run continued from its checkpoint. Where a run executes (this process, or a worker) starts
    it through here."""
    if resume:
        return agent.resume(task_id, user_id=user_id)
    history = None if request.history is None else [Message(role=t.role, content=t.content) for t in request.history]
    return agent.stream(request.message, user_id=user_id, mode=request.mode, selected_tools=request.selected_tools,
                        use_rag=request.use_rag, task_id=task_id, history=history)
