"""The oracle model of ``bench/against_react.py``: the right plan or the right tool calls, served over HTTP.

One ``Oracle`` answers every chat request of ``saber.testing.FakeOpenAIServer`` as a competent
model would for the task whose query the request carries:

- Saber's planner gets the task's plan in the compact form its prompt asks for (``$n1``
  placeholders, which imply the dependency; no field that has its default), followed by the
  task's answer template (``{"answer": "… $n1 …"}``) when ``react_answer_templates.json`` has one
  for it; a replan request gets the plan's nodes that have not run yet (no template); tool mode's argument request gets the one right call;
  memory and preference extraction get ``{}`` (nothing in these queries is worth remembering);
  anything else (the answer, chat) gets the task's answer.
- A ReAct loop (the request carries ``REACT_SYSTEM``) gets, as native ``tool_calls``, every call
  whose inputs are known (the calls of one dependency level, in parallel; the members of a race
  all at once), with placeholders filled from the tool results it has seen; once every call has
  succeeded, the answer.

With a mistake (``Mistake``) the oracle errs once, as real models do, and answers correctly when
asked again. Tokens are counted the same way for both systems: characters / 4 of everything sent
(message text, tool calls, tool definitions) and of everything generated (text, tool-call names
and arguments). The reply waits ``ttft + prompt tokens × prefill`` before its first token and
``token_delay`` per generated token (``FakeReply.token_delay``).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from saber.llm.types import Usage
from saber.testing import FakeReply

REACT_SYSTEM = "You are a helpful assistant. Use the tools when they help, calling independent tools in parallel."
_PLACEHOLDER = re.compile(r"\$\{(n\d+)\}")
_LIVE = ("done", "running", "pending")
"""States of a node shown to the replanner that will give its result: not to be planned again."""
_STATE_LINE = re.compile(r"^- (\S+) \S+?:(\S+) params=(\{.*?\})(?: depends_on=\[.*?\])? status=(\w+)", re.M)


@dataclass(frozen=True, kw_only=True)
class Speed:
    """How fast the fake model is."""

    token: float = 0.006
    """Seconds per generated token."""
    ttft: float = 0.08
    """Seconds before the first token, on top of the prompt's prefill."""
    prefill: float = 0.0001
    """Seconds per prompt token before the first token."""

    def call(self, prompt_tokens: int, completion_tokens: int) -> float:
        return self.ttft + prompt_tokens * self.prefill + completion_tokens * self.token


@dataclass(frozen=True, kw_only=True)
class Mistake:
    kind: str
    """wrong_argument, missing_dependency, unknown_tool or truncated."""
    node: str = ""
    params: Mapping[str, Any] = field(default_factory=dict)
    """wrong_argument: the wrong values; missing_dependency: a ReAct call's guessed arguments."""
    tool: str = ""
    keep: float = 0.6
    """truncated: the fraction of the reply sent before it stops."""

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Mistake:
        return cls(kind=data["kind"], node=data.get("node", ""), tool=data.get("tool", ""), keep=data.get("keep", 0.6),
                   params=data.get("params") or data.get("guess") or {})


@dataclass(frozen=True, kw_only=True)
class Task:
    id: str
    kind: str
    lang: str
    query: str
    plan: list[dict[str, Any]]
    answer: str
    template: str = ""
    """The answer template written after the plan's nodes ("" for none)."""

    def node(self, node_id: str) -> dict[str, Any]:
        return next(n for n in self.plan if n["id"] == node_id)


@dataclass(frozen=True, kw_only=True)
class Call:
    """One model request as the oracle saw it."""

    kind: str
    prompt_tokens: int
    completion_tokens: int


@dataclass
class Run:
    """The oracle's state for one system on one task."""

    task: Task
    results: Mapping[str, str]
    """What each plan node returns: a competent model asked for one call fills in what it knows."""
    mistake: Mistake | None = None
    erred: bool = False
    calls: list[Call] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def err_now(self, kind: str, node: str | None = None) -> bool:
        """Whether to make the mistake now (once per run, at its node)."""
        with self.lock:
            if self.mistake is None or self.erred or self.mistake.kind != kind:
                return False
            if node is not None and self.mistake.node != node:
                return False
            self.erred = True
            return True


def prompt_tokens(body: Mapping[str, Any]) -> int:
    chars = len(json.dumps(body.get("tools"), ensure_ascii=False)) if body.get("tools") else 0
    for message in body.get("messages") or ():
        chars += len(_text(message.get("content")))
        for call in message.get("tool_calls") or ():
            function = call.get("function") or {}
            chars += len(function.get("name") or "") + len(function.get("arguments") or "")
    return max(1, chars // 4)


def completion_tokens(text: str, calls: Sequence[Mapping[str, Any]]) -> int:
    chars = len(text) + sum(len(c["name"]) + len(c["arguments"]) for c in calls)
    return max(1, chars // 4)


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content or "")


def classify(body: Mapping[str, Any]) -> str:
    """react, plan, replan, extraction, tool_args, tool_args_json or answer."""
    messages = body.get("messages") or []
    system = " ".join(_text(m.get("content")) for m in messages if m.get("role") == "system")
    user = " ".join(_text(m.get("content")) for m in messages if m.get("role") == "user")
    if REACT_SYSTEM in system:
        return "react"
    if "depends_on" in system:
        return "replan" if _STATE_LINE.search(user) else "plan"
    if re.search(r"remember|profile of the user|记住|画像", system):
        return "extraction"
    if body.get("tools"):
        return "tool_args"
    if "JSON Schema" in system:
        return "tool_args_json"
    return "answer"


def fill(value: Any, results: Mapping[str, str]) -> Any:
    """``value`` with ``${n}`` placeholders filled: alone, the result itself; inside text, its text."""
    if isinstance(value, str):
        whole = _PLACEHOLDER.fullmatch(value)
        if whole:
            return results[whole.group(1)]
        return _PLACEHOLDER.sub(lambda m: results[m.group(1)], value)
    if isinstance(value, dict):
        return {k: fill(v, results) for k, v in value.items()}
    if isinstance(value, list):
        return [fill(v, results) for v in value]
    return value


class Oracle:
    """Answers the fake server's chat requests for the run set with ``begin``."""

    def __init__(self, speed: Speed) -> None:
        self.speed = speed
        self.run: Run | None = None

    def begin(self, task: Task, results: Mapping[str, str], mistake: Mistake | None = None) -> Run:
        self.run = Run(task=task, results=results, mistake=mistake)
        return self.run

    def __call__(self, body: dict[str, Any]) -> FakeReply:
        run = self.run
        if run is None or not any(run.task.query in _text(m.get("content")) for m in body.get("messages") or ()):
            return FakeReply.fail(400, "oracle: the request carries no query of the current run")
        kind = classify(body)
        text, calls, finish = self._respond(kind, body, run)
        prompt, completion = prompt_tokens(body), completion_tokens(text, calls)
        run.calls.append(Call(kind=kind, prompt_tokens=prompt, completion_tokens=completion))
        return FakeReply(text=text, tool_calls=[dict(c) for c in calls], finish_reason=finish,
                         delay=self.speed.ttft + prompt * self.speed.prefill, token_delay=self.speed.token,
                         usage=Usage(prompt_tokens=prompt, completion_tokens=completion))

    def _respond(self, kind: str, body: dict[str, Any], run: Run) -> tuple[str, list[dict[str, Any]], str | None]:
        if kind == "react":
            return react_step(body, run)
        if kind == "plan":
            return plan_text(run)
        if kind == "replan":
            return replan_text(body, run), [], None
        if kind == "extraction":
            return "{}", [], None
        if kind in ("tool_args", "tool_args_json"):
            return tool_args(kind, body, run)
        return run.task.answer, [], None


def _node_json(node: Mapping[str, Any]) -> dict[str, Any]:
    """A node as the planner prompt shows one: ``$n1`` for a result, which also makes the dependency
    (``depends_on`` only for one no placeholder names), a race group only when there is one."""
    params = json.loads(_PLACEHOLDER.sub(r"$\1", json.dumps(node["params"], ensure_ascii=False)))
    out: dict[str, Any] = {"id": node["id"], "tool": node["tool"], "params": params}
    named = set(_PLACEHOLDER.findall(json.dumps(node["params"], ensure_ascii=False)))
    if set(node["depends_on"]) - named:
        out["depends_on"] = node["depends_on"]
    if node["race_group"]:
        out["race_group"] = node["race_group"]
    return out


def _cut(text: str, keep: float) -> str:
    return text[: max(1, int(len(text) * keep))]


def plan_json(plan: Sequence[Mapping[str, Any]], template: str = "") -> str:
    """A plan as the oracle writes it for Saber's planner: its nodes, then the answer template if any."""
    items = [_node_json(n) for n in plan] + ([{"answer": template}] if template else [])
    return json.dumps(items, ensure_ascii=False, separators=(",", ":"))


def plan_text(run: Run) -> tuple[str, list[dict[str, Any]], str | None]:
    """The plan, with the run's mistake made in it (once)."""
    nodes = [_node_json(n) for n in run.task.plan]
    for node in nodes:
        if run.err_now("wrong_argument", node["id"]):
            node["params"] = {**node["params"], **run.mistake.params}  # type: ignore[union-attr]
        if run.err_now("missing_dependency", node["id"]):  # a guess where the placeholder belongs, as to ReAct
            node["params"] = {**node["params"], **run.mistake.params}  # type: ignore[union-attr]
            node.pop("depends_on", None)
        if run.err_now("unknown_tool", node["id"]):
            node["tool"] = run.mistake.tool  # type: ignore[union-attr]
    template = [{"answer": run.task.template}] if run.task.template else []
    text = json.dumps(nodes + template, ensure_ascii=False, separators=(",", ":"))
    if nodes and run.err_now("truncated"):
        return _cut(text, run.mistake.keep), [], "length"  # type: ignore[union-attr]
    return text, [], None


def replan_text(body: Mapping[str, Any], run: Run) -> str:
    """The plan's nodes the graph does not hold in a state that will give their result (done, or
    still running or pending: matched by tool and params to the state shown), renumbered from the
    first free id, their references to the nodes it holds kept."""
    user = " ".join(_text(m.get("content")) for m in body.get("messages") or () if m.get("role") == "user")
    state = _STATE_LINE.findall(user)
    done: dict[str, str] = {}
    for node in run.task.plan:
        for shown_id, tool, params, status in state:
            if status in _LIVE and tool == node["tool"] and _loads(params) == node["params"]:
                done[node["id"]] = shown_id
    taken = {shown_id for shown_id, *_ in state}
    next_id = len(taken) + 1
    renamed = dict(done)
    for node in run.task.plan:
        if node["id"] not in done:
            while f"n{next_id}" in taken:
                next_id += 1
            renamed[node["id"]] = f"n{next_id}"
            taken.add(renamed[node["id"]])
    added = []
    for node in run.task.plan:
        if node["id"] in done:
            continue
        text = _PLACEHOLDER.sub(lambda m: "${" + renamed[m.group(1)] + "}", json.dumps(node["params"], ensure_ascii=False))
        added.append(_node_json({**node, "id": renamed[node["id"]], "params": json.loads(text),
                                  "depends_on": [renamed[d] for d in node["depends_on"]]}))
    return json.dumps(added, ensure_ascii=False, separators=(",", ":"))


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _wire(call_id: str, name: str, args: Mapping[str, Any]) -> dict[str, Any]:
    """A native tool call, its arguments as compact JSON (as the plan's)."""
    return {"id": call_id, "name": name, "arguments": json.dumps(args, ensure_ascii=False, separators=(",", ":"))}


def tool_args(kind: str, body: Mapping[str, Any], run: Run) -> tuple[str, list[dict[str, Any]], str | None]:
    """Tool mode's one call: the plan's node for the tool asked about."""
    offered = [t.get("function", {}).get("name") for t in body.get("tools") or ()]
    node = next((n for n in run.task.plan if n["tool"] in offered), run.task.plan[0] if run.task.plan else None)
    if node is None:
        return run.task.answer, [], None
    name, params = node["tool"], dict(fill(node["params"], run.results))
    if run.err_now("wrong_argument", node["id"]):
        params.update(run.mistake.params)  # type: ignore[union-attr]
    if run.err_now("unknown_tool", node["id"]):
        name = run.mistake.tool  # type: ignore[union-attr]
    call = _wire(f"call_{node['id']}_args", name, params)
    truncated = run.err_now("truncated")
    if kind == "tool_args_json":
        text = call["arguments"]
        return (_cut(text, run.mistake.keep), [], "length") if truncated else (text, [], None)  # type: ignore[union-attr]
    if truncated:
        call["arguments"] = _cut(call["arguments"], run.mistake.keep)  # type: ignore[union-attr]
        return "", [call], "length"
    return "", [call], None


def _react_history(body: Mapping[str, Any]) -> tuple[dict[str, str], int]:
    """Results of the plan's nodes whose calls succeeded (call ids are ``call_<node>_<k>``), and
    how many calls the conversation holds."""
    names: dict[str, str] = {}
    for message in body.get("messages") or ():
        for call in message.get("tool_calls") or ():
            names[call["id"]] = call["id"].split("_")[1]
    results: dict[str, str] = {}
    for message in body.get("messages") or ():
        if message.get("role") == "tool" and message.get("tool_call_id") in names:
            content = _text(message.get("content"))
            if not content.startswith("Error"):
                results[names[message["tool_call_id"]]] = content
    return results, len(names)


def react_step(body: Mapping[str, Any], run: Run) -> tuple[str, list[dict[str, Any]], str | None]:
    """Every call whose inputs are known and that has not succeeded yet; the answer when none is left."""
    results, made = _react_history(body)
    won = {n["race_group"] for n in run.task.plan if n["race_group"] and n["id"] in results}
    calls = []
    for node in run.task.plan:
        if node["id"] in results or (node["race_group"] and node["race_group"] in won):
            continue
        name, params = node["tool"], node["params"]
        if all(d in results for d in node["depends_on"]):
            params = fill(params, results)
            if run.err_now("wrong_argument", node["id"]):
                params = {**params, **run.mistake.params}  # type: ignore[union-attr]
            if run.err_now("unknown_tool", node["id"]):
                name = run.mistake.tool  # type: ignore[union-attr]
        elif run.err_now("missing_dependency", node["id"]):
            params = {**params, **run.mistake.params}  # type: ignore[union-attr]
        else:
            continue
        calls.append(_wire(f"call_{node['id']}_{made + len(calls)}", name, params))
    if not calls:
        return run.task.answer, [], None
    if run.err_now("truncated"):
        calls[-1]["arguments"] = _cut(calls[-1]["arguments"], run.mistake.keep)  # type: ignore[union-attr]
        return "", calls, "length"
    return "", calls, None


def load(path: str, templates: str | None = None) -> tuple[list[Task], list[tuple[Task, Mistake]]]:
    """The tasks and their mistakes; ``templates`` (a file like ``react_answer_templates.json``) gives
    the answer templates the planner writes."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    written = json.loads(Path(templates).read_text(encoding="utf-8"))["templates"] if templates else {}
    tasks = [Task(**{k: t[k] for k in ("id", "kind", "lang", "query", "plan", "answer")}, template=written.get(t["id"], ""))
             for t in data["tasks"]]
    by_id = {t.id: t for t in tasks}
    return tasks, [(by_id[m["task"]], Mistake.from_dict(m)) for m in data["mistakes"]]
