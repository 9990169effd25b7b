"""Graphs and replans that once hung or broke the scheduler: race groups that wait on each other,
replans with clashing ids, a replan racing a cancel, and which errors are worth a retry."""

from __future__ import annotations

import asyncio
import errno
import socket
from collections.abc import Sequence
from typing import Any

import httpx
import pytest
from graph_testkit import Recorder, fn_tool

from saber.graph import GraphConfig, GraphError, GraphRuntime, Node, NodeStatus, ReplanRequest, TaskGraph
from saber.graph.retry import classify
from saber.llm.base import ModelError
from saber.tools import ToolError


async def ok(args: dict[str, Any]) -> str:
    return "ok"


TOOLS = {"t": fn_tool("t", ok)}


# -- finding 2: race groups that depend on each other ---------------------------------------------

def test_a_cycle_between_race_groups_is_rejected_naming_the_groups() -> None:
    nodes = [
        Node(id="A", tool="t", race_group="g1"),
        Node(id="B", tool="t", race_group="g1", depends_on=["C"]),
        Node(id="C", tool="t", race_group="g2"),
        Node(id="D", tool="t", race_group="g2", depends_on=["A"]),
    ]
    with pytest.raises(GraphError, match=r"race groups wait on each other: (g1 -> g2 -> g1|g2 -> g1 -> g2)"):
        GraphRuntime(nodes, TOOLS, GraphConfig())


def test_a_cycle_through_a_plain_node_between_race_groups_is_rejected() -> None:
    nodes = [
        Node(id="A", tool="t", race_group="g1"),
        Node(id="B", tool="t", race_group="g1", depends_on=["X"]),
        Node(id="X", tool="t", depends_on=["C"]),
        Node(id="C", tool="t", race_group="g2"),
        Node(id="D", tool="t", race_group="g2", depends_on=["A"]),
    ]
    with pytest.raises(GraphError, match="race groups wait on each other"):
        GraphRuntime(nodes, TOOLS, GraphConfig())


async def test_race_groups_without_a_cycle_between_them_still_run() -> None:
    nodes = [
        Node(id="A", tool="t", race_group="g1"),
        Node(id="B", tool="t", race_group="g1"),
        Node(id="C", tool="t", race_group="g2", depends_on=["A"]),
        Node(id="D", tool="t", race_group="g2", depends_on=["B"]),
    ]
    result = await GraphRuntime(nodes, TOOLS, GraphConfig()).run()
    assert result.status == "done"
    assert sorted(n.status.value for n in result.nodes.values()) == ["done", "done", "skipped", "skipped"]


async def test_with_racing_off_groups_do_not_constrain_the_graph() -> None:
    nodes = [
        Node(id="A", tool="t", race_group="g1"),
        Node(id="B", tool="t", race_group="g1", depends_on=["C"]),
        Node(id="C", tool="t", race_group="g2"),
        Node(id="D", tool="t", race_group="g2", depends_on=["A"]),
    ]
    result = await GraphRuntime(nodes, TOOLS, GraphConfig(enable_racing=False)).run()
    assert result.status == "done" and all(n.status is NodeStatus.DONE for n in result.nodes.values())


async def test_nodes_left_pending_when_the_loop_drains_fail_instead_of_reporting_done() -> None:
    rec = Recorder()
    rt = GraphRuntime([Node(id="a", tool="t"), Node(id="b", tool="t", depends_on=["a"])], TOOLS, GraphConfig(),
                      on_event=rec)
    # Simulate a scheduler bookkeeping bug: "b" is never released when "a" finishes.
    rt._state._dependents["a"].clear()
    result = await rt.run()
    assert result.status == "failed"
    assert result.nodes["a"].status is NodeStatus.DONE
    assert result.nodes["b"].status is NodeStatus.FAILED
    assert "internal error" in (result.nodes["b"].error or "") and "never started" in (result.nodes["b"].error or "")
    assert any(e.id == "b" and e.status == "failed" for e in rec.of("node_done"))  # type: ignore[attr-defined]
    assert any("internal error" in e.message for e in rec.of("error"))  # type: ignore[attr-defined]


# -- finding 6: a replan with clashing ids changes nothing ----------------------------------------

def test_taskgraph_add_with_a_duplicate_changes_nothing() -> None:
    g = TaskGraph([Node(id="n1", tool="t")])
    with pytest.raises(GraphError, match="duplicate node id: n1"):
        g.add([Node(id="x", tool="t"), Node(id="n1", tool="t")])
    assert list(g.nodes) == ["n1"]
    with pytest.raises(GraphError, match="duplicate node id: y"):
        g.add([Node(id="y", tool="t"), Node(id="z", tool="t"), Node(id="y", tool="t")])
    assert list(g.nodes) == ["n1"]
    g.add([Node(id="y", tool="t", depends_on=["n1"])])
    assert list(g.nodes) == ["n1", "y"]


async def test_a_rejected_replan_leaves_no_ghost_and_a_later_replan_cannot_crash_the_run() -> None:
    asks: list[str] = []

    async def replanner(request: ReplanRequest) -> Sequence[Node]:
        asks.append(request.reason)
        if len(asks) == 1:
            return [Node(id="extra", tool="t"), Node(id="n1", tool="t")]  # n1 clashes: whole batch rejected
        return [Node(id="after", tool="t", depends_on=["extra"])]  # "extra" must not exist

    async def bad(args: dict[str, Any]) -> str:
        raise ToolError("down", retryable=False)

    rec = Recorder()
    rt = GraphRuntime([Node(id="n1", tool="bad")], {**TOOLS, "bad": fn_tool("bad", bad)}, GraphConfig(max_replan=2),
                      on_event=rec, replanner=replanner)
    result = await rt.run()
    assert sorted(result.nodes) == ["n1"]
    assert result.status == "failed"
    errors = [e.message for e in rec.of("error")]  # type: ignore[attr-defined]
    assert errors[0] == "replan rejected: duplicate node id: n1"
    assert "replan rejected" in errors[1] and "extra" in errors[1]
    assert len(asks) == 2


async def test_a_replanner_returning_garbage_is_reported_not_raised() -> None:
    async def replanner(request: ReplanRequest) -> Sequence[Any]:
        return ["not a node"]

    rec = Recorder()
    result = await GraphRuntime([Node(id="n1", tool="t")], TOOLS, GraphConfig(max_replan=1), on_event=rec,
                                replanner=replanner).run()
    assert result.status == "done" and sorted(result.nodes) == ["n1"]
    assert any(e.message.startswith("replan rejected") for e in rec.of("error"))  # type: ignore[attr-defined]


# -- finding 7: no replan once the run is cancelled -----------------------------------------------

async def test_a_failure_that_arrives_with_a_cancel_starts_no_replan() -> None:
    calls: list[str] = []

    async def replanner(request: ReplanRequest) -> Sequence[Node]:
        calls.append(request.detail)
        return [Node(id="x9", tool="t")]

    rt: GraphRuntime | None = None

    async def boom(args: dict[str, Any]) -> str:
        assert rt is not None
        rt.cancel()  # the user presses stop while this node is failing
        raise ToolError("backend down", retryable=False)

    rt = GraphRuntime([Node(id="n1", tool="boom")], {"boom": fn_tool("boom", boom)}, GraphConfig(max_replan=2),
                      replanner=replanner)
    result = await rt.run()
    assert result.status == "cancelled" and result.replans == 0
    assert result.nodes["n1"].status is NodeStatus.FAILED
    left = [t.get_name() for t in asyncio.all_tasks() if t.get_name().startswith("saber-")]
    assert left == []
    await asyncio.sleep(0)  # give a stray replan task, if one had been spawned, its first step
    assert calls == []


# -- finding 8: which errors are retryable ---------------------------------------------------------

@pytest.mark.parametrize("exc", [
    FileNotFoundError(errno.ENOENT, "No such file or directory", "/data/report.pdf"),
    PermissionError(errno.EACCES, "Permission denied"),
    IsADirectoryError(errno.EISDIR, "Is a directory"),
    OSError("disk gone"),
    ModelError("bad request", retryable=False),
])
def test_local_os_errors_and_non_retryable_model_errors_are_not_retried(exc: BaseException) -> None:
    failure = classify(exc)
    assert failure.retryable is False
    assert "connection error" not in failure.message and type(exc).__name__ in failure.message


@pytest.mark.parametrize("exc", [
    ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused"),
    ConnectionResetError(errno.ECONNRESET, "reset"),
    socket.gaierror(socket.EAI_NONAME, "Name or service not known"),
    httpx.ConnectError("refused"),
    httpx.ReadTimeout("slow"),
    ModelError("endpoint unreachable: connection refused", retryable=True),
])
def test_connection_errors_and_retryable_model_errors_are_retried(exc: BaseException) -> None:
    assert classify(exc).retryable is True


def test_a_retryable_attribute_decides_for_any_exception() -> None:
    class Flagged(Exception):
        def __init__(self, retryable: bool) -> None:
            super().__init__("flagged")
            self.retryable = retryable

    assert classify(Flagged(True)).retryable is True
    assert classify(Flagged(False)).retryable is False


async def test_a_missing_file_fails_at_once() -> None:
    calls: list[str] = []

    def read_doc(args: dict[str, Any]) -> str:
        calls.append(args["path"])
        with open(args["path"], encoding="utf-8") as f:
            return f.read()

    tools = {"read": fn_tool("read", read_doc, {"type": "object", "properties": {"path": {"type": "string"}}})}
    result = await GraphRuntime([Node(id="n1", tool="read", params={"path": "/nonexistent/report.pdf"})], tools,
                                GraphConfig(retry_delay=0)).run()
    node = result.nodes["n1"]
    assert node.status is NodeStatus.FAILED and node.attempts == 1 and len(calls) == 1
    assert node.error is not None and node.error.startswith("FileNotFoundError")


def test_connection_errors_of_common_client_libraries_are_retryable() -> None:
    import ssl
    import urllib.error

    from saber.graph.retry import classify

    class ConnectionError(OSError):  # the shape of requests.exceptions.ConnectionError
        pass

    retryable = [
        urllib.error.URLError(ConnectionRefusedError(111, "Connection refused")),
        urllib.error.URLError(TimeoutError("timed out")),
        ConnectionError("HTTPConnectionPool: Max retries exceeded"),
        ssl.SSLEOFError(8, "EOF occurred in violation of protocol"),
        urllib.error.HTTPError("http://x", 503, "unavailable", {}, None),  # type: ignore[arg-type]
    ]
    not_retryable = [
        urllib.error.URLError("unknown url type: ftp"),
        urllib.error.HTTPError("http://x", 404, "not found", {}, None),  # type: ignore[arg-type]
        FileNotFoundError(2, "No such file"),
    ]
    assert [classify(e).retryable for e in retryable] == [True] * len(retryable)
    assert [classify(e).retryable for e in not_retryable] == [False] * len(not_retryable)


async def test_a_replan_rejected_for_a_member_waiting_on_its_own_group_leaves_the_run_whole() -> None:
    asks: list[str] = []

    async def replanner(request: ReplanRequest) -> Sequence[Node]:
        asks.append(request.reason)
        if len(asks) == 1:
            return [Node(id="r1", tool="t", race_group="g"), Node(id="r2", tool="t", race_group="g", depends_on=["r1"])]
        return [Node(id="r1", tool="t"), Node(id="after", tool="t", depends_on=["r1"])]  # the ids are free again

    async def bad(args: dict[str, Any]) -> str:
        raise ToolError("down", retryable=False)

    rec = Recorder()
    result = await GraphRuntime([Node(id="n1", tool="bad")], {**TOOLS, "bad": fn_tool("bad", bad)},
                                GraphConfig(max_replan=2, on_failure="continue"), on_event=rec, replanner=replanner).run()
    errors = [e.message for e in rec.of("error")]  # type: ignore[attr-defined]
    assert errors[0] == "replan rejected: race group 'g': r2 depends on r1 of the same group"
    assert sorted(result.nodes) == ["after", "n1", "r1"]
    assert result.nodes["after"].status is NodeStatus.DONE and result.nodes["r1"].status is NodeStatus.DONE
