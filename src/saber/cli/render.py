"""Printing a request's events: JSON lines for scripts, or progress on stderr and the answer on stdout.

Every value that came from the query, a document, a tool or a model is added as plain text
(``rich.text.Text``), never as markup, so ``[/]`` or ``[red]x[/red]`` is shown exactly as written.
"""

from __future__ import annotations

import json
from typing import Any

from saber import jsonsafe
from saber.cli.output import err, line, out, write_raw

_STATUS_STYLE = {"done": "green", "failed": "red", "skipped": "yellow", "cancelled": "yellow"}


class RunState:
    """What a renderer learnt about the request so far (for the message after Ctrl-C)."""

    def __init__(self) -> None:
        self.task_id: str | None = None
        self.mode: str | None = None
        self.graph = False

    def note(self, kind: str, data: dict[str, Any]) -> None:
        if kind == "start":
            self.task_id = str(data.get("task_id") or "") or None
        elif kind == "route":
            self.mode = str(data.get("mode"))
        elif kind in ("plan", "graph_ready", "node_start"):
            self.graph = True

    @property
    def resumable(self) -> bool:
        """A react task (a checkpointed graph) can be continued with ``saber resume``."""
        return self.task_id is not None and (self.mode == "react" or self.graph)


class JsonRenderer:
    def __init__(self) -> None:
        self.state = RunState()

    def render(self, kind: str, data: dict[str, Any], event: dict[str, Any]) -> None:
        self.state.note(kind, data)
        write_raw(jsonsafe.dumps(event))


class RichRenderer:
    """Progress lines on stderr, the answer on stdout (so ``saber ask ... > answer.txt`` works).
    ``model`` is the configured model: when it did not write the answer, the last line says so
    (rather than that there is no model)."""

    def __init__(self, *, model: str | None = None) -> None:
        self.streaming = False
        self.state = RunState()
        self.model = model

    def render(self, kind: str, data: dict[str, Any], event: dict[str, Any]) -> None:
        self.state.note(kind, data)
        if kind == "token":
            self.streaming = True
            out().print(str(data["content"]), end="", markup=False, highlight=False, emoji=False)
            return
        if kind == "done":
            if self.streaming:
                out().print()
            elif data.get("answer"):
                out().print(str(data["answer"]), markup=False, highlight=False, emoji=False)
            usage = data.get("usage") or {}
            extra = f" · {usage.get('total_tokens', 0)} tokens" if usage.get("total_tokens") else ""
            who = data.get("model") or (f"assembled by rules: the model {self.model} did not write this answer"
                                        if self.model else "no language model")
            if data.get("answer_template"):  # the planner's sentence, written before the results
                who += " (its plan's answer template, results filled in)"
            note = " · interrupted" if data.get("interrupted") else ""
            err().print(line((f"— {data['mode']} · {who}{extra}{note}", "dim")))
            return
        shown = progress_line(kind, data)
        if shown is not None:
            err().print(shown)


def _short(value: object, limit: int) -> str:
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def progress_line(kind: str, data: dict[str, Any]) -> Any:
    """One line for a progress event (a ``rich.text.Text``), or None for events not shown."""
    if kind == "route":
        return line(("route", "cyan"), f" {data['mode']} ", (f"({data.get('rule', '')})", "dim"))
    if kind == "plan":
        steps = ", ".join(f"{n['id']}:{n.get('tool') or n.get('agent')}" for n in data["nodes"]) or "no steps"
        warnings = data.get("warnings") or []
        cut = f" (cut off: {data['truncated']}; {data.get('dropped_nodes', 0)} node(s) dropped)" if data.get("truncated") else ""
        return line(("plan", "cyan"), " ", (f"{data.get('source')}/{data.get('format')}", "dim"), f" {steps}",
                    (f" ({len(warnings)} warning(s))" if warnings else "", "yellow"), (cut, "red"))
    if kind == "node_added":
        node = data.get("node") or {}
        deps = node.get("depends_on") or []
        return line(("+", "cyan"), f" {node.get('id')} {node.get('tool') or node.get('agent')}",
                    (f" after {', '.join(deps)}" if deps else "", "dim"), (" (replaced)" if data.get("replaces") else "", "dim"))
    if kind == "approval_required":
        return line(("approval", "yellow"), f" {data['node_id']} {data['tool']} waits: {data['reason']} ",
                    (f"(saber approve {data['task_id']} {data['node_id']})", "dim"))
    if kind == "approval_given":
        verdict = "approved" if data.get("approved") else "denied"
        return line(("approval", "yellow"), f" {data['node_id']} {verdict} by {data['by']}",
                    (f": {data['reason']}" if data.get("reason") else "", "dim"))
    if kind == "node_start":
        attempt = data.get("attempt", 1)
        return line(("▶", "blue"), f" {data['id']} {data['tool']}", (f" (attempt {attempt})" if attempt > 1 else "", "dim"))
    if kind == "node_done":
        why = f" {_short(data['error'], 160)}" if data.get("error") else ""
        return line(("■", _STATUS_STYLE.get(str(data["status"]), "white")), f" {data['id']} {data['tool']} {data['status']} ",
                    (f"{float(data['duration_ms']):.0f} ms", "dim"), (why, "dim"))
    if kind == "race_won":
        return line(("race", "magenta"), f" {data['race_group']}: {data['winner']} ({data['tool']}) won")
    if kind == "tool_call":
        shown = data.get("tool_result") if data.get("error") is None else f"error: {data['error']}"
        params = json.dumps(data.get("params"), ensure_ascii=False, default=str)
        return line(("tool", "cyan"), f" {data['tool_name']}({params}) → {_short(shown, 200)}")
    if kind == "rag_result":
        return line(("knowledge base", "cyan"), f" {len(data['hits'])} hit(s) for {data['query']!r}")
    if kind == "memory":
        return line((f"memory {data['action']}: {data.get('content') or ''} {data.get('reason') or ''}", "dim"))
    if kind == "error":
        return line(("error", "red"), " ", (f"({data.get('where')})", "dim"), f" {data['message']}")
    if kind == "replan":
        return line(("replan", "cyan"), f" +{len(data['added'])} ({data['reason']})")
    return None
