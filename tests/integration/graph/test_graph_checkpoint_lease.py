"""A running task is leased to one process: resuming it elsewhere is refused while that process
lives, allowed once its lease expired or its process is gone (SQLite and PostgreSQL alike)."""

from __future__ import annotations

import asyncio
import sqlite3
import sys
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from graph_stores import pg_database

from saber.graph import (
    CheckpointStore,
    GraphConfig,
    GraphRuntime,
    Node,
    PostgresCheckpointStore,
    SQLiteCheckpointStore,
)
from saber.graph.checkpoint import TaskClaimedError
from saber.graph.checkpoint.base import new_owner
from saber.tools import Tool


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def target(kind: str, tmp_path: Path) -> Iterator[str]:
    if kind == "sqlite":
        yield str(tmp_path / "saber.db")
    else:
        yield from pg_database()


class Stores:
    """Stores on one database; each stands for a separate process (its own connection)."""

    def __init__(self, kind: str, target: str) -> None:
        self.kind, self.target = kind, target
        self.opened: list[CheckpointStore] = []

    def open(self, lease_seconds: float = 60.0) -> CheckpointStore:
        store: CheckpointStore = (SQLiteCheckpointStore(self.target, lease_seconds=lease_seconds) if self.kind == "sqlite"
                                  else PostgresCheckpointStore(self.target, lease_seconds=lease_seconds))
        self.opened.append(store)
        return store

    def set_owner(self, task_id: str, owner: str) -> None:
        """What another process's successful claim leaves in the database."""
        if self.kind == "sqlite":
            with sqlite3.connect(self.target) as db:
                db.execute("UPDATE checkpoint_tasks SET owner=? WHERE task_id=?", (owner, task_id))
        else:
            with psycopg.connect(self.target, autocommit=True) as conn:
                conn.execute("UPDATE checkpoint_tasks SET owner=%s WHERE task_id=%s", (owner, task_id))


@pytest.fixture
async def stores(kind: str, target: str) -> AsyncIterator[Stores]:
    s = Stores(kind, target)
    yield s
    for store in s.opened:
        await store.close()


class Pay:
    """A tool with a side effect; calls wait until the test lets them finish."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.started = asyncio.Event()
        self.release = asyncio.Event()

    def tool(self) -> Tool:
        async def pay(args: dict[str, Any]) -> str:
            self.calls[args["k"]] += 1
            self.started.set()
            await self.release.wait()
            return "paid"

        return Tool.from_json_schema("pay", "pays", {"type": "object", "properties": {"k": {"type": "string"}}}, pay)


def nodes() -> list[Node]:
    return [Node(id="n1", tool="pay", params={"k": "n1"})]


async def test_a_live_owner_blocks_resume_until_its_run_ends(stores: Stores) -> None:
    pay = Pay()
    owner = asyncio.create_task(GraphRuntime(nodes(), {"pay": pay.tool()}, GraphConfig(), checkpoint=stores.open(),
                                             task_id="T").run())
    await pay.started.wait()
    other = stores.open()
    with pytest.raises(TaskClaimedError, match=r"^task T is running in another process \(lease until \d{4}-"):
        await GraphRuntime.restore("T", other, {"pay": pay.tool()})
    pay.release.set()
    assert (await owner).status == "done"
    resumed = await GraphRuntime.resume("T", other, {"pay": pay.tool()})  # finished: nothing left to run
    assert resumed.status == "done" and pay.calls == {"n1": 1}


async def test_an_expired_lease_lets_another_process_resume(stores: Stores) -> None:
    pay = Pay()
    pay.release.set()
    elsewhere = "other-host:4242:abcdef"  # a process on another host: trusted until its lease ends
    await stores.open(lease_seconds=60).save_graph("T", nodes(), config=GraphConfig().to_dict(),
                                                   status="running", owner=elsewhere)
    with pytest.raises(TaskClaimedError, match="running in another process"):
        await GraphRuntime.restore("T", stores.open(), {"pay": pay.tool()})
    await stores.open(lease_seconds=0).save_graph("T", nodes(), config=GraphConfig().to_dict(),
                                                  status="running", owner=elsewhere)  # its lease ends at once
    result = await GraphRuntime.resume("T", stores.open(), {"pay": pay.tool()})
    assert result.status == "done" and pay.calls == {"n1": 1}


async def test_a_dead_owner_on_this_host_frees_its_task_at_once(stores: Stores) -> None:
    pay = Pay()
    pay.release.set()
    child = await asyncio.create_subprocess_exec(sys.executable, "-c", "pass")
    await child.wait()
    dead = new_owner().rsplit(":", 2)[0] + f":{child.pid}:0123456789ab"  # this host, a pid that has exited
    await stores.open(lease_seconds=60).save_graph("T", nodes(), config=GraphConfig().to_dict(),
                                                   status="running", owner=dead)
    result = await GraphRuntime.resume("T", stores.open(), {"pay": pay.tool()})
    assert result.status == "done" and pay.calls == {"n1": 1}


async def test_the_running_owner_renews_its_lease_beyond_the_lease_length(stores: Stores) -> None:
    pay = Pay()
    store = stores.open(lease_seconds=0.6)  # renewed every 0.2 s
    renewed = asyncio.Event()
    renewals: list[bool] = []
    renew = store.renew

    async def counting(task_id: str, owner: str) -> bool:
        ok = await renew(task_id, owner)
        renewals.append(ok)
        if len(renewals) >= 4:  # more than one whole lease has passed since the run started
            renewed.set()
        return ok

    store.renew = counting  # type: ignore[method-assign]
    owner = asyncio.create_task(GraphRuntime(nodes(), {"pay": pay.tool()}, GraphConfig(), checkpoint=store,
                                             task_id="T").run())
    await renewed.wait()
    with pytest.raises(TaskClaimedError, match="running in another process"):
        await GraphRuntime.restore("T", stores.open(), {"pay": pay.tool()})
    pay.release.set()
    assert (await owner).status == "done" and all(renewals)
    saved = await stores.open().load("T")
    assert saved is not None and saved.status == "done" and saved.lease_until is None


async def test_an_owner_that_lost_its_task_stops_and_overwrites_nothing(stores: Stores) -> None:
    pay = Pay()
    rt = GraphRuntime([*nodes(), Node(id="n2", tool="pay", params={"k": "n2"}, depends_on=["n1"])],
                      {"pay": pay.tool()}, GraphConfig(), checkpoint=stores.open(), task_id="T")
    run = asyncio.create_task(rt.run())
    await pay.started.wait()
    stores.set_owner("T", "other-host:7:feedfacecafe")  # it stalled past its lease; another process took over
    pay.release.set()
    result = await run
    assert result.status == "cancelled" and pay.calls == {"n1": 1}  # n2 never started here
    saved = await stores.open().load("T")
    assert saved is not None and saved.status == "running" and saved.owner == "other-host:7:feedfacecafe"
    assert [n.status.value for n in saved.nodes] == ["pending", "pending"]  # left to the new owner


async def test_a_replan_after_losing_the_task_does_not_take_it_back(stores: Stores) -> None:
    async def boom(args: dict[str, Any]) -> str:
        from saber.tools import ToolError

        raise ToolError("nope")

    async def fine(args: dict[str, Any]) -> str:
        return "ok"

    tools = {"boom": Tool.from_json_schema("boom", "fails", None, boom), "ok": Tool.from_json_schema("ok", "ok", None, fine)}
    asked, go = asyncio.Event(), asyncio.Event()

    async def replanner(request: Any) -> list[Node]:
        asked.set()
        await go.wait()
        return [Node(id="n2", tool="ok")]

    run = asyncio.create_task(GraphRuntime([Node(id="n1", tool="boom")], tools, GraphConfig(max_replan=1, max_attempts=1),
                                           checkpoint=stores.open(), task_id="T", replanner=replanner).run())
    await asked.wait()
    stores.set_owner("T", "other-host:1:abc")  # another process took the task over meanwhile
    go.set()
    result = await run
    assert result.status == "cancelled"
    assert "n2" not in result.nodes or result.nodes["n2"].status.value == "cancelled", "nothing ran for a lost task"
    saved = await stores.open().load("T")
    assert saved is not None and saved.owner == "other-host:1:abc"
    assert [n.id for n in saved.nodes] == ["n1"], "the new owner's graph was not rewritten"
