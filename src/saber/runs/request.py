"""``RunRequest``: a request as data, one type from the HTTP body through the run queue to the worker.

The in-process server hands the agent its arguments directly; the distributed mode stores them
in the run queue, and the worker that takes the run reads them back. Both ends use this model,
so a row the worker cannot read (written by an older version, or edited by hand) is refused by
the same validation that answers 422 at the API node, and failed with that reason instead of
being retried.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError


class HistoryTurn(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    role: Literal["system", "user", "assistant", "tool"]
    content: str


class RunRequest(BaseModel):
    """What a worker needs to run a request (a resume needs none of it: the checkpoint has it)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    message: str = ""
    mode: Literal["chat", "tool", "rag", "react"] | None = None
    selected_tools: list[str] | None = None
    use_rag: StrictBool | None = None
    history: list[HistoryTurn] | None = None
    after: int = Field(0, ge=0)
    """The sequence number of the task's last event before this run (a resumed task's earlier
    runs): this run's events follow it."""

    @classmethod
    def read(cls, data: Mapping[str, Any] | RunRequest | None) -> RunRequest:
        """The request from its stored form; a ``ValueError`` naming what is wrong otherwise."""
        if isinstance(data, RunRequest):
            return data
        if data is not None and not isinstance(data, Mapping):
            raise ValueError(f"malformed run request: a JSON object is needed, not {type(data).__name__}")
        try:
            return cls.model_validate(dict(data or {}))
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'request'}: {e['msg']}"
                                 for e in exc.errors(include_url=False))
            raise ValueError(f"malformed run request: {problems}") from None

    def stored(self) -> dict[str, Any]:
        """The JSON form the run queue keeps."""
        return self.model_dump(mode="json")
