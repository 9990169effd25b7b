"""The one run manager on this process's backend: the typed request reaches the agent as the route
validated it, a run reports one status from start to end, and a task id is taken once."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from saber.agent import Agent
from saber.config import Settings
from saber.runs.errors import ApiError
from saber.runs.local import LocalRuns
from saber.runs.manager import RunManager, TaskRun
from saber.runs.request import HistoryTurn, RunInput
from saber.testing import ScriptedModel


@pytest.fixture
def model() -> ScriptedModel:
    return ScriptedModel(["first answer", "second answer", "third answer"])


@pytest.fixture
async def agent(tmp_path: Path, model: ScriptedModel) -> AsyncIterator[Agent]:
    built = Agent(Settings(home=tmp_path, search={"backend": "none"}), model=model, builtin=False)
    yield built
    await built.aclose()


def chat_run(task_id: str, message: str, history: list[HistoryTurn] | None = None) -> TaskRun:
    request = RunInput(message=message, mode="chat").run_request(history)
    return TaskRun(task_id=task_id, user_id="ann", kind="chat", query=message, request=request)


async def test_the_request_reaches_the_agent_and_the_run_reports_one_status(agent: Agent, model: ScriptedModel) -> None:
    runs = RunManager(LocalRuns(agent), max_running_per_user=2, keep_finished=1)
    earlier = [HistoryTurn(role="user", content="what is a quokka?"), HistoryTurn(role="assistant", content="a marsupial")]
    run = await runs.start(chat_run("t1", "and where does it live?", earlier))
    await runs.wait(run)
    assert run.status == "done" and run.log.last("done").data["answer"] == "first answer"  # type: ignore[union-attr]
    sent = [(m.role, m.content) for m in model.calls[0].messages if m.role != "system"]
    assert sent[-3:] == [("user", "what is a quokka?"), ("assistant", "a marsupial"), ("user", "and where does it live?")]
    assert await runs.records(["t1", "nope"]) == {"t1": "done"}
    assert (await runs.find("t1", "ann")) is run and await runs.find("t1", "bob") is None

    with pytest.raises(ApiError, match="task id 't1' already exists: choose a new one") as refused:
        await runs.start(chat_run("t1", "again"))
    assert refused.value.status == 409 and (await runs.find("t1", "ann")) is run, "the finished run is kept"

    second = await runs.start(chat_run("t2", "next"))
    await runs.wait(second)
    third = await runs.start(chat_run("t3", "one more"))  # keep_finished=1: the oldest finished run is forgotten
    assert await runs.find("t1", "ann") is None and await runs.find("t2", "ann") is second
    await runs.wait(third)
    model.assert_complete()
