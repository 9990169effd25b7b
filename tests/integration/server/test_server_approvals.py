"""Approvals over HTTP: only the task's own user can answer its waiting step."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
from server_helpers import LiveServer, read_sse

from saber.testing import FakeOpenAIServer
from saber.tools import tool

ALICE = {"Authorization": "Bearer key-alice"}
BOB = {"Authorization": "Bearer key-bob"}
RAN: list[str] = []


@tool(requires_approval=True)
def launch(target: str) -> str:
    """Launch something (records that it ran).

    Args:
        target: What to launch.
    """
    RAN.append(target)
    return f"launched {target}"


def test_only_the_tasks_user_can_answer_and_the_step_runs_once(serve: Callable[..., LiveServer],
                                                                fake_llm: FakeOpenAIServer) -> None:
    RAN.clear()
    plan = [{"id": "n1", "type": "tool", "tool": "launch", "params": {"target": "the rocket"}, "depends_on": []}]
    fake_llm.queue(json.dumps(plan), "Launched.")
    live = serve(keys=True, tools=[launch])
    seen: list[Any] = []
    with httpx.Client(base_url=live.url, timeout=30) as client:
        body = {"message": "launch the rocket", "mode": "react"}
        with client.stream("POST", "/api/chat/stream", json=body, headers=ALICE) as response:
            for sse in read_sse(response):
                seen.append(sse)
                if sse.event == "approval_required":
                    task, node = sse.data["task_id"], sse.data["node_id"]
                    assert client.get("/api/approvals", headers=BOB).json() == []
                    mine = client.get("/api/approvals", headers=ALICE).json()
                    assert [(q["task_id"], q["node_id"], q["tool"]) for q in mine] == [(task, node, "launch")]
                    refused = client.post(f"/api/tasks/{task}/approvals/{node}", json={"approve": True}, headers=BOB)
                    assert refused.status_code == 404
                    assert RAN == []
                    bad = client.post(f"/api/tasks/{task}/approvals/{node}", json={"approve": "yes"}, headers=ALICE)
                    assert bad.status_code == 422
                    ok = client.post(f"/api/tasks/{task}/approvals/{node}", json={"approve": True}, headers=ALICE)
                    assert ok.status_code == 200 and ok.json()["status"] == "approved"
                    again = client.post(f"/api/tasks/{task}/approvals/{node}", json={"approve": False}, headers=ALICE)
                    assert again.status_code == 409
                if sse.event == "done":
                    break
    kinds = [s.event for s in seen]
    assert "approval_given" in kinds and kinds[-1] == "done"
    given = next(s for s in seen if s.event == "approval_given")
    assert given.data["approved"] is True and given.data["by"] == "alice"
    assert RAN == ["the rocket"]
