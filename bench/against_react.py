"""Saber against LangGraph's prebuilt ReAct agent on tool-heavy work, with an oracle model and a mistaken one.

    pip install -e '.[bench]'      # langgraph and langchain-openai
    python bench/against_react.py  [--quick | --tasks N] [--token-ms 6] [--latency-scale 1] [--no-mistakes]
                                   [--no-templates] [--per-task]

The tasks (``bench/data/react_tasks.json``, written before the bench first ran) are 48 requests:
independent fan-out, dependent chains through ``${n}`` placeholders, fan-in, races between
interchangeable sources, single-tool and no-tool, in English and Chinese. The oracle's plans are written
in the compact form Saber's planner prompt asks for; where the reply only states the results, it
ends the plan with an answer template (``bench/data/react_answer_templates.json``, written later,
by one stated rule), which Saber fills in instead of asking for the answer. Both systems talk HTTP to
one ``saber.testing.FakeOpenAIServer`` answered by ``react_oracle.Oracle`` (the right plan for Saber's
planner, the right parallel native tool calls for the ReAct loop, then the answer), at a per-token
delay, and call the same local tools (``react_tools.py``, each with a backend's latency).

Systems, side by side in one run (their order rotating from task to task):
- saber-stream: ``Agent`` with ``planner_stream`` on (the default), in react mode (every task
  planned; ``--route auto`` lets the rule router choose chat, tool or react as for a user);
- saber-whole: the same with ``planner_stream`` off;
- react: ``langgraph.prebuilt.create_react_agent`` over ``langchain_openai.ChatOpenAI``.

Per system: exact-call rate (the multiset of tool calls made, tool + validated arguments, equals
the oracle's; of a race's members at least one must be called, others may be), model calls
(including Saber's background extraction, awaited after each task), prompt and completion tokens
(counted by the oracle, characters / 4, identically for both), wall time, and time past the
critical path (the system's own oracle sequence: each model call's time to first token plus its
tokens, and the longest chain of tool latencies between them; a race waits for its first member
in Saber's graph, for all in a ReAct round). Then the mistaken oracle (one wrong argument, missing
dependency, unknown tool or truncated reply per task, answering correctly when asked again): how
many runs still end with exactly the right successful calls, and the extra model calls it cost.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
import warnings
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import react_tools as tools
from react_oracle import (
    REACT_SYSTEM,
    Call,
    Mistake,
    Oracle,
    Run,
    Speed,
    Task,
    completion_tokens,
    fill,
    load,
    plan_json,
)
from saber import Agent, Settings
from saber.testing import FakeOpenAIServer

TASKS = Path(__file__).resolve().parent / "data" / "react_tasks.json"
TEMPLATES = Path(__file__).resolve().parent / "data" / "react_answer_templates.json"
SYSTEMS = ("saber-stream", "saber-whole", "react")
DEPENDENT = ("chain", "fanin", "mixed")


@dataclass(frozen=True)
class Expected:
    """The oracle's calls for a task: those that must run, and each race's interchangeable members."""

    required: Counter[tuple[str, str]]
    races: list[set[tuple[str, str]]]
    results: dict[str, str]

    def exact(self, made: Sequence[tuple[str, str]]) -> bool:
        left = Counter(made)
        for group in self.races:
            present = [c for c in group if left[c] > 0]
            if not present:
                return False
            for c in present:
                left[c] -= 1
        return +left == self.required


async def expected(task: Task) -> Expected:
    """Run the plan's calls once without latency, in a recorder of their own."""
    saved, tools.CALLS = tools.CALLS, tools.Recorder(scale=0.0)
    results: dict[str, str] = {}
    required: Counter[tuple[str, str]] = Counter()
    races: dict[str, set[tuple[str, str]]] = {}
    try:
        for node in task.plan:
            tool = tools.BY_NAME[node["tool"]]
            args = tool.validate(fill(node["params"], results))
            results[node["id"]] = str(await tool.run(args, validate=False))
            call = (node["tool"], tools.key(args))
            if node["race_group"]:
                races.setdefault(node["race_group"], set()).add(call)
            else:
                required[call] += 1
    finally:
        tools.CALLS = saved
    return Expected(required=required, races=list(races.values()), results=results)


def critical_path(system: str, task: Task, exp: Expected, speed: Speed, scale: float, templated: bool = False) -> float:
    """The system's own oracle sequence: its model calls (first token and generated tokens, no
    prefill: prompts differ by system) and the tool latencies between them. ``templated``: Saber
    answered with the plan's template, so there is no answer call after the tools."""
    answer = speed.call(0, completion_tokens(task.answer, []))
    if not task.plan:
        return answer
    latency = {n["id"]: tools.LATENCY[n["tool"]] * scale for n in task.plan}
    if system == "react":
        return answer + _react_rounds(task, exp, speed, latency)
    if task.kind == "single":
        node = task.plan[0]
        first = speed.call(0, completion_tokens("", [{"name": node["tool"], "arguments": _compact(node["params"])}]))
    else:
        first = speed.call(0, completion_tokens(plan_json(task.plan, task.template if templated else ""), []))
    return first + _graph_makespan(task, latency) + (0.0 if templated else answer)


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _react_rounds(task: Task, exp: Expected, speed: Speed, latency: dict[str, float]) -> float:
    """One round per dependency level: the calls (arguments filled in), then the slowest of them."""
    level: dict[str, int] = {}
    for n in task.plan:
        level[n["id"]] = 1 + max((level[d] for d in n["depends_on"]), default=-1)
    total = 0.0
    for k in range(max(level.values()) + 1):
        nodes = [n for n in task.plan if level[n["id"]] == k]
        calls = [{"name": n["tool"], "arguments": _compact(fill(n["params"], exp.results))} for n in nodes]
        total += speed.call(0, completion_tokens("", calls)) + max(latency[n["id"]] for n in nodes)
    return total


def _graph_makespan(task: Task, latency: dict[str, float]) -> float:
    """Each node starts when its dependencies finish; a race is over when its first member is."""
    finish: dict[str, float] = {}
    for n in task.plan:
        finish[n["id"]] = max((finish[d] for d in n["depends_on"]), default=0.0) + latency[n["id"]]
    ends = [finish[n["id"]] for n in task.plan if not n["race_group"]]
    for group in {n["race_group"] for n in task.plan if n["race_group"]}:
        ends.append(min(finish[n["id"]] for n in task.plan if n["race_group"] == group))
    return max(ends)


@dataclass
class Outcome:
    """One system's run of one task."""

    system: str
    task: Task
    mistake: Mistake | None
    made: list[tuple[str, str, bool]]
    exact: bool
    exact_ok: bool
    wall: float
    critical: float
    calls: list[Call]
    round: int = 0
    mode: str = ""
    error: str = ""
    templated: bool = False
    """Saber's answer was the plan's answer template filled with the results (``done.answer_template``)."""

    @property
    def prompt(self) -> int:
        return sum(c.prompt_tokens for c in self.calls)

    @property
    def completion(self) -> int:
        return sum(c.completion_tokens for c in self.calls)


@dataclass
class Bench:
    """The systems under test, one fake endpoint and its oracle."""

    server: FakeOpenAIServer
    oracle: Oracle
    speed: Speed
    scale: float
    home: Path
    agents: dict[str, Agent] = field(default_factory=dict)
    react: Any = None
    runs: int = 0
    route: Any = None
    """Saber's mode: None routes as a user's request is routed; "react" plans every task."""
    one_user: bool = False
    """All tasks as one user (history and batched memory work carry over), not a new user each."""

    async def start(self) -> None:
        for system, streamed in (("saber-stream", True), ("saber-whole", False)):
            settings = Settings(
                home=self.home / system,
                llm={"base_url": self.server.base_url, "api_key": "bench", "model": "oracle"},
                planner={"stream": streamed}, search={"backend": "none"})
            self.agents[system] = Agent(settings, tools=tools.TOOLS, builtin=False)
        self.react = react_agent(self.server.base_url)

    async def close(self) -> None:
        for agent in self.agents.values():
            await agent.aclose()

    async def one(self, system: str, task: Task, exp: Expected, mistake: Mistake | None, round: int = 0) -> Outcome:
        self.runs += 1
        tools.CALLS = tools.Recorder(scale=self.scale)
        run = self.oracle.begin(task, exp.results, mistake)
        start = time.perf_counter()
        mode, error, templated = "react-loop", "", False
        try:
            if system == "react":
                await self.react.ainvoke({"messages": [{"role": "user", "content": task.query}]}, {"recursion_limit": 30})
                wall = time.perf_counter() - start
            else:
                mode, wall, templated = await self._saber(self.agents[system], task, start)
        except Exception as exc:  # a system that fails on a task is reported, not fatal to the bench
            wall, error = time.perf_counter() - start, f"{type(exc).__name__}: {exc}"[:200]
        made = list(tools.CALLS.calls)
        return Outcome(system=system, task=task, mistake=mistake, made=made, wall=wall,
                       exact=exp.exact([(n, k) for n, k, _ in made]), exact_ok=exp.exact([(n, k) for n, k, ok in made if ok]),
                       critical=critical_path(system, task, exp, self.speed, self.scale, templated), calls=_calls(run),
                       round=round, mode=mode, error=error, templated=templated)

    async def _saber(self, agent: Agent, task: Task, start: float) -> tuple[str, float, bool]:
        mode, wall, templated = "", 0.0, False
        user = "bench" if self.one_user else f"bench-{self.runs}"
        async for event in agent.stream(task.query, user_id=user, mode=self.route):
            if event.type == "route":
                mode = event.data["mode"]
            elif event.type == "done":
                wall = time.perf_counter() - start
                templated = bool(event.data.get("answer_template"))
        await agent.drain()  # the background extraction calls count as this task's
        return mode, wall, templated


def _calls(run: Run) -> list[Call]:
    with run.lock:
        return list(run.calls)


def react_agent(base_url: str) -> Any:
    """LangGraph's prebuilt ReAct agent over the same endpoint and the same tools (validated by the
    same ``Tool.validate``; a tool's error goes back to the model as its result)."""
    try:
        from langchain_core.tools import StructuredTool
        from langchain_openai import ChatOpenAI
        from langgraph.prebuilt import ToolNode, create_react_agent
    except ImportError as exc:
        raise SystemExit(f"{exc.name} is missing: pip install -e '.[bench]'") from None

    def wrap(tool: Any) -> StructuredTool:
        async def call(**kwargs: Any) -> str:
            return str(await tool.run(kwargs))

        return StructuredTool(name=tool.name, description=tool.description, args_schema=tool.schema, coroutine=call)

    model = ChatOpenAI(model="oracle", base_url=base_url, api_key="bench", temperature=0)
    node = ToolNode([wrap(t) for t in tools.TOOLS], handle_tool_errors=True)
    with warnings.catch_warnings():  # create_react_agent is deprecated in favour of langchain's create_agent
        warnings.simplefilter("ignore")
        return create_react_agent(model, node, prompt=REACT_SYSTEM)


# -- the report ---------------------------------------------------------------------------------


def _sum(rows: Sequence[Outcome], attr: str) -> float:
    return float(sum(getattr(r, attr) if attr != "calls" else len(r.calls) for r in rows))


def summary_table(outcomes: Sequence[Outcome], title: str) -> None:
    print(f"\n{title}")
    print(f"  {'system':13} {'exact calls':>12} {'model calls':>12} {'prompt tok':>11} {'compl. tok':>11} "
          f"{'wall s':>8} {'past critical path (exact runs)':>32}")
    for system in SYSTEMS:
        rows = [o for o in outcomes if o.system == system]
        if not rows:
            continue
        exact = [o for o in rows if o.exact]
        past = f"{statistics.fmean(o.wall - o.critical for o in exact):+.2f} s/task" if exact else "-"
        print(f"  {system:13} {len(exact):>5}/{len(rows):<3} {len(exact) / len(rows):4.0%} {_sum(rows, 'calls'):>12.0f} "
              f"{_sum(rows, 'prompt'):>11.0f} {_sum(rows, 'completion'):>11.0f} {_sum(rows, 'wall'):>8.1f} {past:>32}")


def purpose_table(outcomes: Sequence[Outcome]) -> None:
    purposes = sorted({c.kind for o in outcomes for c in o.calls})
    print("\nmodel calls by purpose (as the oracle classified the requests), and their mean prompt tokens")
    print("  " + f"{'system':13}" + "".join(f"{p:>12}" for p in purposes))
    for system in SYSTEMS:
        calls = [c for o in outcomes if o.system == system for c in o.calls]
        counts = Counter(c.kind for c in calls)
        if counts:
            print("  " + f"{system:13}" + "".join(f"{counts[p]:>12}" for p in purposes))
            prompt = {p: statistics.fmean([c.prompt_tokens for c in calls if c.kind == p] or [0]) for p in purposes}
            print("  " + f"{'  prompt tok':13}" + "".join(f"{prompt[p]:>12.0f}" if counts[p] else f"{'':>12}" for p in purposes))
    modes = {s: Counter(o.mode for o in outcomes if o.system == s) for s in SYSTEMS[:2]}
    print("  Saber's routes: " + "; ".join(f"{s} " + ", ".join(f"{m} {n}" for m, n in c.most_common()) for s, c in modes.items()))
    filled = {s: [o for o in outcomes if o.system == s and o.templated] for s in SYSTEMS[:2]}
    print("  answered with the plan's template (no answer call): " + "; ".join(
        f"{s} {len(rows)} of {sum(o.system == s for o in outcomes)} ({sum(o.task.kind in DEPENDENT for o in rows)} dependent)"
        for s, rows in filled.items()))


def ratio_table(outcomes: Sequence[Outcome]) -> None:
    print("\nratios Saber / ReAct, over the tasks both ran with exactly the oracle's calls (side by side in this run)")
    print(f"  {'tasks':22} {'system':13} {'n':>3} {'model calls':>12} {'prompt tok':>11} {'compl. tok':>11} {'wall':>7}")
    subsets = [("all", lambda t: True), ("dependent multi-tool", lambda t: t.kind in DEPENDENT),
               ("independent fan-out", lambda t: t.kind == "fanout"), ("race", lambda t: t.kind == "race"),
               ("single-tool", lambda t: t.kind == "single"), ("no tool", lambda t: t.kind == "none")]
    react = {(o.task.id, o.round): o for o in outcomes if o.system == "react" and o.exact}
    for name, keep in subsets:
        for system in SYSTEMS[:2]:
            pairs = [(o, react[(o.task.id, o.round)]) for o in outcomes
                     if o.system == system and o.exact and keep(o.task) and (o.task.id, o.round) in react]
            if not pairs:
                continue
            ours, theirs = [p[0] for p in pairs], [p[1] for p in pairs]
            cells = [_sum(ours, a) / max(1e-9, _sum(theirs, a)) for a in ("calls", "prompt", "completion", "wall")]
            print(f"  {name:22} {system:13} {len(pairs):>3} {cells[0]:>11.2f}x {cells[1]:>10.2f}x {cells[2]:>10.2f}x "
                  f"{cells[3]:>6.2f}x")


def task_table(outcomes: Sequence[Outcome]) -> None:
    """Each task's wall time and critical path per system (``--per-task``)."""
    print("\nper task: wall s / critical path s (t: answered with the plan's template)")
    print(f"  {'task':11} {'kind':7}" + "".join(f"{s:>22}" for s in SYSTEMS))
    for task_id in dict.fromkeys(o.task.id for o in outcomes):
        rows = {o.system: o for o in outcomes if o.task.id == task_id and o.round == 0}
        cells = [f"{rows[s].wall:.2f} / {rows[s].critical:.2f}{' t' if rows[s].templated else '  '}" if s in rows else "-"
                 for s in SYSTEMS]
        kind = next(iter(rows.values())).task.kind
        print(f"  {task_id:11} {kind:7}" + "".join(f"{c:>22}" for c in cells))


def kind_table(outcomes: Sequence[Outcome]) -> None:
    kinds = sorted({o.task.kind for o in outcomes})
    print("\nexact calls by kind of task")
    print("  " + f"{'system':13}" + "".join(f"{k:>9}" for k in kinds))
    for system in SYSTEMS:
        rows = [o for o in outcomes if o.system == system]
        if rows:
            cells = []
            for k in kinds:
                of_kind = [o for o in rows if o.task.kind == k]
                cells.append(f"{sum(o.exact for o in of_kind)}/{len(of_kind)}")
            print("  " + f"{system:13}" + "".join(f"{c:>9}" for c in cells))


def misses(outcomes: Sequence[Outcome], exp: dict[str, Expected], title: str, ok_only: bool = False) -> None:
    print(f"\n{title} (+ made, not expected | - expected, not made)")
    for o in outcomes:
        if (o.exact_ok if ok_only else o.exact):
            continue
        made = Counter((n, k) for n, k, good in o.made if good or not ok_only)
        want = exp[o.task.id].required + Counter(c for g in exp[o.task.id].races for c in g)
        extra = ", ".join(f"{n}{k}" for (n, k) in (made - want).elements())
        lost = ", ".join(f"{n}{k}" for (n, k) in (want - made).elements())
        note = f" [{o.error}]" if o.error else ""
        what = f"{o.mistake.kind} " if o.mistake else ""
        print(f"  {o.system:13} {what}{o.task.id:10} mode={o.mode:6} +[{extra[:150]}] -[{lost[:150]}]{note}")


def mistake_table(mistaken: Sequence[Outcome], clean: Sequence[Outcome]) -> None:
    base = {(o.system, o.task.id): o for o in clean}
    kinds = list(dict.fromkeys(o.mistake.kind for o in mistaken if o.mistake))
    print("\nthe mistaken oracle: runs that still end with exactly the right successful calls, and the cost")
    print(f"  {'mistake':20} {'system':13} {'right calls':>12} {'extra model calls':>18} {'wrong calls run':>16} {'extra wall s':>13}")
    for kind in kinds:
        for system in SYSTEMS:
            rows = [o for o in mistaken if o.system == system and o.mistake and o.mistake.kind == kind]
            if not rows:
                continue
            ok = sum(o.exact_ok for o in rows)
            extra = sum(len(o.calls) - len(base[(system, o.task.id)].calls) for o in rows if (system, o.task.id) in base)
            wrong = sum(sum(1 for _, _, good in o.made if not good) for o in rows)
            wall = sum(o.wall - base[(system, o.task.id)].wall for o in rows if (system, o.task.id) in base)
            print(f"  {kind:20} {system:13} {ok:>8}/{len(rows):<3} {extra:>18} {wrong:>16} {wall:>13.2f}")


# -- main ---------------------------------------------------------------------------------------


async def run(args: argparse.Namespace) -> None:
    tasks, mistakes = load(str(TASKS), None if args.no_templates else str(TEMPLATES))
    if args.tasks:
        tasks = _spread(tasks, args.tasks)
        mistakes = [(t, m) for t, m in mistakes if t.id in {x.id for x in tasks}] or mistakes[: max(1, args.tasks // 3)]
    if args.no_mistakes:
        mistakes = []
    speed = Speed(token=args.token_ms / 1000, ttft=args.ttft_ms / 1000, prefill=args.prefill_ms / 1000)
    needed = {t.id: t for t in [*tasks, *(t for t, _ in mistakes)]}
    exp = {task_id: await expected(t) for task_id, t in needed.items()}
    print(f"{len(tasks)} tasks ({', '.join(f'{k} {n}' for k, n in Counter(t.kind for t in tasks).items())}; "
          f"{sum(t.lang == 'zh' for t in tasks)} Chinese), {len(mistakes)} mistaken runs per system; "
          f"model {args.token_ms:g} ms/token, first token {args.ttft_ms:g} ms + {args.prefill_ms:g} ms per prompt token; "
          f"tool latencies x{args.latency_scale:g}; Saber routing: {args.route}; "
          f"answer templates in {sum(bool(t.template) for t in tasks)} plans")
    oracle = Oracle(speed)
    with tempfile.TemporaryDirectory(prefix="saber-react-bench-") as tmp:
        async with FakeOpenAIServer([oracle] * 100_000, model="oracle") as server:
            bench = Bench(server=server, oracle=oracle, speed=speed, scale=args.latency_scale, home=Path(tmp),
                          route=None if args.route == "auto" else "react", one_user=args.one_user)
            await bench.start()
            try:
                clean, mistaken = await _rounds(bench, tasks, mistakes, exp, args.repeat)
            finally:
                await bench.close()
    summary_table(clean, f"the oracle model: {len(tasks)} tasks x {args.repeat} round(s)")
    ratio_table(clean)
    purpose_table(clean)
    kind_table(clean)
    if args.per_task:
        task_table(clean)
    misses(clean, exp, "runs without exactly the oracle's calls")
    if mistaken:
        mistake_table(mistaken, [o for o in clean if o.mistake is None])
        misses(mistaken, exp, "mistaken runs not ending with exactly the right successful calls", ok_only=True)
    print(f"\n(load average at the end: {__import__('os').getloadavg()[0]:.1f} on {__import__('os').cpu_count()} cores)")


async def _rounds(bench: Bench, tasks: Sequence[Task], mistakes: Sequence[tuple[Task, Mistake]],
                  exp: dict[str, Expected], repeat: int) -> tuple[list[Outcome], list[Outcome]]:
    clean: list[Outcome] = []
    mistaken: list[Outcome] = []
    turn = 0
    for k in range(repeat):
        for task in tasks:
            for system in _rotated(turn):
                clean.append(await bench.one(system, task, exp[task.id], None, k))
            turn += 1
        print(f"  round done: {len(clean)} runs", file=sys.stderr)
    for task, mistake in mistakes:
        for system in _rotated(turn):
            mistaken.append(await bench.one(system, task, exp[task.id], mistake))
        turn += 1
    return clean, mistaken


def _rotated(turn: int) -> list[str]:
    k = turn % len(SYSTEMS)
    return [*SYSTEMS[k:], *SYSTEMS[:k]]


def _spread(tasks: Sequence[Task], n: int) -> list[Task]:
    """``n`` tasks taken across the kinds in turn, so a short run still has each kind."""
    by_kind: dict[str, list[Task]] = {}
    for t in tasks:
        by_kind.setdefault(t.kind, []).append(t)
    picked: list[Task] = []
    while len(picked) < min(n, len(tasks)):
        for group in by_kind.values():
            if group and len(picked) < n:
                picked.append(group.pop(0))
    return picked


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--tasks", type=int, default=0, help="run only N tasks, spread over the kinds")
    parser.add_argument("--quick", action="store_true", help="12 tasks and their mistakes")
    parser.add_argument("--repeat", type=int, default=1, help="rounds over the tasks")
    parser.add_argument("--token-ms", type=float, default=6.0, help="model time per generated token")
    parser.add_argument("--ttft-ms", type=float, default=80.0, help="model time to the first token")
    parser.add_argument("--prefill-ms", type=float, default=0.1, help="model time per prompt token")
    parser.add_argument("--latency-scale", type=float, default=1.0, help="multiplies every tool's latency")
    parser.add_argument("--route", choices=("react", "auto"), default="react",
                        help="Saber's mode: every task planned (react, the default: the planner is what is compared), "
                             "or routed as a user's request is (auto)")
    parser.add_argument("--one-user", action="store_true",
                        help="Saber serves every task to one user (history carries over; the ReAct loop keeps none)")
    parser.add_argument("--no-mistakes", action="store_true", help="skip the mistaken oracle")
    parser.add_argument("--per-task", action="store_true", help="print each task's wall time and critical path")
    parser.add_argument("--no-templates", action="store_true",
                        help="the oracle writes no answer template after a plan (the generator answers every task)")
    args = parser.parse_args(argv)
    if args.quick and not args.tasks:
        args.tasks = 12
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
