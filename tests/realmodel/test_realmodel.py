"""Saber with a real, badly behaved model (SmolLM2-135M): bounded and honest, whatever the model does.

The model is wrong most of the time. What must hold for every request: it ends within its
deadline, nothing crashes, no tool runs with a value copied from the planner prompt's example,
and every failed generation is labelled. The figures (time per request, model plans kept,
repaired or replaced by the rules) are printed: ``pytest tests/realmodel -m realmodel -s``.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from saber.agent import Agent
from saber.agent.memory import MemoryService
from saber.agent.memory.sqlite_store import SQLiteMemoryStore
from saber.config import Settings
from saber.events import Done, Error, GraphReady, Plan, ToolCallEvent
from saber.planner.grounding import ADDED, COPIED
from saber.rag.embedder import HashingEmbedder
from saber.rag.engine import RagEngine
from saber.rag.store import SQLiteStore

pytestmark = [pytest.mark.slow, pytest.mark.realmodel]

CLOSED = "http://127.0.0.1:9"
DEADLINE = 60.0
EXAMPLE_VALUES = {"shanghai", "上海", "k8s service types", "k8s service 类型"}
"""The parameter values of the planner prompt's worked example."""

QUERIES: list[tuple[str, str]] = [
    ("chat", "你好"),
    ("chat", "Hello, who are you?"),
    ("chat", "讲一个关于猫的笑话"),
    ("chat", "What is 2 + 2?"),
    ("chat", "Write one sentence about green tea."),
    ("tool", "现在几点"),
    ("tool", "What time is it in Tokyo?"),
    ("tool", "东京现在几点"),
    ("tool", "What's the time in London?"),
    ("tool", "北京天气怎么样"),
    ("rag", "ClusterIP 可以从集群外访问吗"),
    ("rag", "How long does a response stay fresh with Cache-Control?"),
    ("rag", "NodePort 是什么"),
    ("rag", "What does max-age mean?"),
    ("rag", "知识库里关于 Service 类型的内容"),
    ("react", "What time is it in Tokyo and what's the weather in Paris?"),
    ("react", "现在几点，北京天气怎么样"),
    ("react", "Compare the time in New York and London"),
    ("react", "东京和巴黎现在几点"),
    ("react", "What time is it in Sydney, and what is the weather there?"),
    ("react", "查一下上海的天气"),
    ("react", "What's the weather in Berlin?"),
]

LABELS = ("Note:", "注：", "cut", "截断", "Sorry", "抱歉", "deadline", "时限", "failed", "失败")


def settings(home: Path, server: Any) -> Settings:
    return Settings(home=home,
                    llm={"base_url": server.base_url, "model": server.model, "timeout": 30.0,
                         "stall_timeout": 15.0, "max_retries": 0, "max_tokens_planner": 160,
                         "max_tokens_answer": 160},
                    agent={"request_deadline": DEADLINE}, search={"backend": "none"},
                    weather={"geocoding_url": f"{CLOSED}/v1/search", "forecast_url": f"{CLOSED}/v1/forecast"},
                    graph={"retry_delay": 0.0, "max_attempts": 1})


def copied_values(event: Any, query: str) -> list[str]:
    """Example values in the arguments of a tool that ran (graph_ready nodes, tool calls)."""
    params: list[dict[str, Any]] = []
    if isinstance(event, GraphReady):
        params = [n.get("params") or {} for n in event.nodes]
    elif isinstance(event, ToolCallEvent):
        params = [event.params or {}]
    folded = query.casefold()
    return [v for p in params for v in p.values()
            if isinstance(v, str) and v.casefold() in EXAMPLE_VALUES and v.casefold() not in folded]


def plan_outcome(events: list[Any]) -> str | None:
    plans = [e for e in events if isinstance(e, Plan)]
    if not plans:
        return None
    if any(p.source == "rules" for p in plans):
        return "replaced"
    if any(COPIED in w or ADDED in w for p in plans for w in p.warnings):
        return "repaired"
    return "kept"


@pytest.mark.timeout(900)
def test_model_check_against_the_real_server(llama_server: Any, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SABER_")}
    env.update({"SABER_HOME": str(tmp_path), "SABER_LLM_BASE_URL": llama_server.base_url, "SABER_LLM_MODEL": llama_server.model})
    done = subprocess.run([sys.executable, "-m", "saber.cli", "model", "check", "--json", "--timeout", "60"], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    print("\nsaber model check:", json.dumps({k: report[k] for k in ("served_model", "context_length", "tokens_per_second", "uses")},
                                              ensure_ascii=False))
    for name, probe in report["probes"].items():
        print(f"  {name}: {'ok' if probe['ok'] else 'no'} — {probe['detail']}")
    assert report["probes"]["models"]["ok"] and report["probes"]["completion"]["ok"] and report["probes"]["streaming"]["ok"]


@pytest.mark.timeout(1500)
async def test_every_request_is_bounded_and_honest(llama_server: Any, tmp_path: Path) -> None:
    config = settings(tmp_path, llama_server)
    engine = RagEngine(SQLiteStore(str(config.sqlite_path)), HashingEmbedder())
    engine.ingest_text("K8s Service 类型", "# Service\n\nClusterIP 是默认类型，只在集群内部可达。NodePort 在每个节点上开放端口。",
                       source="k8s.md")
    engine.ingest_text("HTTP caching", "Cache-Control max-age tells a cache how many seconds a response stays fresh.",
                       source="http.md")
    agent = Agent(config, knowledge=engine, memory=MemoryService(SQLiteMemoryStore(config.sqlite_path), HashingEmbedder()))
    rows: list[dict[str, Any]] = []
    problems: list[str] = []
    try:
        for mode, query in QUERIES:
            start = time.perf_counter()
            answer = await agent.ask(query, user_id="realmodel", mode=mode)  # type: ignore[arg-type]
            seconds = time.perf_counter() - start
            errors = [e for e in answer.events if isinstance(e, Error)]
            failed_generation = [e for e in errors if e.where in ("generator", "chat", "tool", "rag", "deadline")]
            labelled = any(label in answer.answer for label in LABELS)
            row = {"mode": mode, "query": query, "seconds": round(seconds, 1), "plan": plan_outcome(answer.events),
                   "by_model": answer.model is not None, "errors": [f"{e.where}: {e.message}" for e in errors],
                   "failed": bool(failed_generation), "labelled": bool(failed_generation) and labelled,
                   "answer": answer.answer[:160]}
            rows.append(row)
            if not isinstance(answer.events[-1], Done) or sum(isinstance(e, Done) for e in answer.events) != 1:
                problems.append(f"{query}: the request did not end with one done event")
            if seconds > DEADLINE + 5:
                problems.append(f"{query}: took {seconds:.1f}s, past the {DEADLINE:g}s deadline")
            if not answer.answer.strip():
                problems.append(f"{query}: empty answer")
            for event in answer.events:
                if copied := copied_values(event, query):
                    problems.append(f"{query}: a tool ran with the example value(s) {copied}")
            if failed_generation and not labelled:
                problems.append(f"{query}: failed generation not labelled: {answer.answer[:200]!r}")
            if any(e.where == "agent" for e in errors):
                problems.append(f"{query}: the request itself failed: {errors}")
    finally:
        await agent.aclose()
    print_figures(rows)
    assert not problems, "\n".join(problems)


def print_figures(rows: list[dict[str, Any]]) -> None:
    print("\n=== SmolLM2-135M through llama-cpp-python: one request per line ===")
    for r in rows:
        flags = f"plan={r['plan']}" if r["plan"] else ""
        print(f"{r['seconds']:6.1f}s  {r['mode']:<5} by_model={str(r['by_model']):<5} {flags:<14} {r['query']}")
        for error in r["errors"]:
            print(f"          error {error[:150]}")
        print(f"          answer {json.dumps(r['answer'], ensure_ascii=False)[:170]}")
    times = [r["seconds"] for r in rows]
    print(f"time per request: median {statistics.median(times):.1f}s, max {max(times):.1f}s, total {sum(times):.0f}s, "
          f"{len(rows)} requests")
    for mode in ("chat", "tool", "rag", "react"):
        mine = [r for r in rows if r["mode"] == mode]
        if mine:
            print(f"  {mode}: median {statistics.median(r['seconds'] for r in mine):.1f}s; "
                  f"usable model answers {sum(not r['failed'] for r in mine)}/{len(mine)}, "
                  f"failed generations {sum(r['failed'] for r in mine)}/{len(mine)} (labelled {sum(r['labelled'] for r in mine)})")
    plans = [r["plan"] for r in rows if r["plan"]]
    if plans:
        print("model plans: " + ", ".join(f"{k} {plans.count(k)}/{len(plans)} ({100 * plans.count(k) / len(plans):.0f}%)"
                                          for k in ("kept", "repaired", "replaced")))
