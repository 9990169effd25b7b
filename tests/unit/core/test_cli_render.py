"""Pieces of the CLI that need no process: the query length check, step counts, progress lines."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

import pytest

from saber.cli.main import _check_length, _steps
from saber.cli.output import CLIError
from saber.cli.render import RunState, progress_line


def test_a_query_over_max_query_chars_is_a_usage_error() -> None:
    settings = cast(Any, SimpleNamespace(agent=SimpleNamespace(max_query_chars=10)))
    _check_length(settings, "x" * 10)
    with pytest.raises(CLIError, match="11 characters long; the maximum is 10") as caught:
        _check_length(settings, "x" * 11)
    assert caught.value.code == 2
    _check_length(cast(Any, SimpleNamespace()), "x" * 10_000)  # no such setting: nothing to check here


def test_failed_and_skipped_steps_are_not_counted_as_done() -> None:
    assert _steps({"nodes": 4, "finished": 4, "done": 2, "failed": 1, "skipped": 1}) == "2 done, 1 failed, 1 skipped of 4"
    assert _steps({"nodes": 3, "finished": 3, "done": 3, "failed": 0, "skipped": 0}) == "3 done of 3"
    assert _steps({"nodes": 3, "finished": 3, "done": 3, "failed": 0, "skipped": 0,
                   "plan_truncated": {"reason": "over the limit", "dropped_nodes": 2}}) == "3 done of 3 (plan cut: 2 dropped)"


def test_progress_lines_keep_markup_as_text() -> None:
    shown = progress_line("tool_call", {"tool_name": "t", "params": {"q": "[red]x[/red]"}, "tool_result": "[/] ok"})
    assert shown.plain == 't({"q": "[red]x[/red]"}) → [/] ok'.join(("tool ", ""))
    assert progress_line("error", {"where": "[b]", "message": "[/]"}).plain == "error ([b]) [/]"


def test_a_cut_plan_says_so_on_its_progress_line() -> None:
    nodes = [{"id": "n1", "tool": "get_weather"}]
    whole = progress_line("plan", {"source": "model", "format": "ideal", "nodes": nodes})
    cut = progress_line("plan", {"source": "model", "format": "ideal", "nodes": nodes, "dropped_nodes": 2,
                                 "truncated": "it has 3 nodes, over the limit of 1"})
    assert whole.plain == "plan model/ideal n1:get_weather"
    assert cut.plain == whole.plain + " (cut off: it has 3 nodes, over the limit of 1; 2 node(s) dropped)"


def test_only_react_tasks_are_offered_for_resume() -> None:
    state = RunState()
    state.note("start", {"task_id": "abc"})
    state.note("route", {"mode": "tool"})
    assert not state.resumable
    state.note("route", {"mode": "react"})
    assert state.resumable and state.task_id == "abc"


def test_an_answer_from_the_plans_template_says_so_under_the_answer(capsys: pytest.CaptureFixture[str]) -> None:
    from saber.cli.render import RichRenderer

    done = {"mode": "react", "answer": "东京现在是 10:00", "model": "fake-model", "usage": {}}
    RichRenderer(model="fake-model").render("done", done | {"answer_template": True}, {})
    RichRenderer(model="fake-model").render("done", done, {})
    footers = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("—")]
    assert footers == ["— react · fake-model (its plan's answer template, results filled in)", "— react · fake-model"]
