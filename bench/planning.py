"""Streamed planning vs parse-after-complete: end-to-end time of react requests.

    python bench/planning.py [--repeat 3] [--rates 30 60]

A real Agent talks HTTP to saber.testing.FakeOpenAIServer, which streams a six-node plan at the
given tokens/s (tokens counted as characters / 4, as the fake's usage does) and then a short
answer. The tools sleep for latencies typical of their real backends (web search 1.2 s, weather
0.6 s, a page fetch 0.9 s, the clock 0.05 s); one node joins two searches (critical path 1.2 +
0.3 s). Both settings (``planner_stream`` on and off) run side by side in this one run, the
order alternating per repeat; the median of the repeats is printed.

Target (issue #19): total ≤ 1.10 × (max(plan stream time, critical path) + answer time), where
parse-after-complete takes their sum. The plan stream time and the answer time are measured in
each run (request start → ``plan`` event after the last plan token; last ``node_done`` →
``done``). No plan can start its last node before the planner has written it, so the streamed
run cannot beat plan time + the last-written node's own latency; that floor is printed too.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

from saber import Agent, Settings
from saber.events import NodeDone, Plan
from saber.llm.openai_compat import OpenAIChatModel
from saber.testing import FakeOpenAIServer, FakeReply
from saber.tools import tool

LATENCY = {"search_web": 1.2, "get_weather": 0.6, "fetch_page": 0.9, "get_time": 0.05, "combine": 0.3}


@tool(name="search_web")
async def search_web(query: str) -> str:
    """Search the web."""
    await asyncio.sleep(LATENCY["search_web"])
    return f"results for {query}"


@tool(name="get_weather")
async def get_weather(city: str) -> str:
    """Weather of a city."""
    await asyncio.sleep(LATENCY["get_weather"])
    return f"{city}: sunny, 21°C"


@tool(name="fetch_page")
async def fetch_page(url: str) -> str:
    """Fetch a web page."""
    await asyncio.sleep(LATENCY["fetch_page"])
    return f"the text of {url}"


@tool(name="get_time")
async def get_time(timezone: str = "UTC") -> str:
    """Time in a zone."""
    await asyncio.sleep(LATENCY["get_time"])
    return f"12:00 in {timezone}"


@tool(name="combine")
async def combine(a: str, b: str) -> str:
    """Put two findings side by side."""
    await asyncio.sleep(LATENCY["combine"])
    return f"{a} | {b}"


PLAN = [
    {"id": "n1", "type": "tool", "tool": "search_web", "goal": "find this week's train strike dates in Paris",
     "params": {"query": "Paris train strike dates this week"}, "depends_on": [], "race_group": None},
    {"id": "n2", "type": "tool", "tool": "search_web", "goal": "find museum opening hours in Paris on Monday",
     "params": {"query": "Paris museums opening hours Monday"}, "depends_on": [], "race_group": None},
    {"id": "n3", "type": "tool", "tool": "get_weather", "goal": "the weather in Paris for the trip",
     "params": {"city": "Paris"}, "depends_on": [], "race_group": None},
    {"id": "n4", "type": "tool", "tool": "fetch_page", "goal": "read the Louvre's visitor page",
     "params": {"url": "https://www.louvre.fr/en/visit"}, "depends_on": [], "race_group": None},
    {"id": "n5", "type": "tool", "tool": "combine", "goal": "put strikes and opening hours side by side",
     "params": {"a": "${n1}", "b": "${n2}"}, "depends_on": ["n1", "n2"], "race_group": None},
    {"id": "n6", "type": "tool", "tool": "get_time", "goal": "the local time in Paris now",
     "params": {"timezone": "Europe/Paris"}, "depends_on": [], "race_group": None},
]
CRITICAL_PATH = LATENCY["search_web"] + LATENCY["combine"]
ANSWER = ("Strikes are planned on Tuesday and Thursday; the Louvre is closed on Monday but the Orsay is open; "
          "it will be sunny at 21°C and it is noon in Paris now.")
QUERY = "I'm in Paris on Monday: are there train strikes, which museums are open, and what's the weather?"


def pieces(text: str) -> int:
    """How many chunks the fake server streams ``text`` in (word pieces, whitespace attached)."""
    return len(re.findall(r"\S+\s*|\s+", text))


def chunk_delay(text: str, rate: float) -> float:
    """Seconds between the fake server's word pieces so that ``text`` streams at ``rate`` tokens/s."""
    return (len(text) / 4 / rate) / max(1, pieces(text))


def planner_reply(text: str, rate: float, streamed: bool) -> FakeReply:
    """The same generation either way: streamed piece by piece, or sent whole once it is all
    written (a non-streamed request waits for the last token too)."""
    delay = chunk_delay(text, rate)
    return FakeReply(text=text, chunk_delay=delay) if streamed else FakeReply(text=text, delay=delay * pieces(text))


async def one(server: FakeOpenAIServer, home: Path, rate: float, streamed: bool) -> dict[str, float]:
    plan = json.dumps(PLAN, ensure_ascii=False)
    server.queue(planner_reply(plan, rate, streamed),
                 FakeReply(text=ANSWER, chunk_delay=chunk_delay(ANSWER, rate)))
    settings = Settings(home=home, search={"backend": "none"}, planner={"stream": streamed})
    async with OpenAIChatModel(server.model, base_url=server.base_url, api_key="k") as model:
        agent = Agent(settings, model=model, tools=[search_web, get_weather, fetch_page, get_time, combine],
                      builtin=False)
        try:
            start = time.perf_counter()
            plan_at = last_node = done_at = 0.0
            nodes = 0
            async for event in agent.stream(QUERY, user_id="bench", mode="react"):
                now = time.perf_counter() - start
                if isinstance(event, Plan):
                    plan_at = now
                elif isinstance(event, NodeDone):
                    last_node, nodes = now, nodes + (event.status == "done")
                elif event.type == "done":
                    done_at = now
        finally:
            await agent.aclose()
    if nodes != len(PLAN):
        raise SystemExit(f"only {nodes} of {len(PLAN)} nodes finished: the bench measures nothing")
    return {"total": done_at, "plan": plan_at, "answer": done_at - last_node}


async def main(rates: list[float], repeat: int) -> None:
    print(f"six-node plan ({len(json.dumps(PLAN)) // 4} tokens), critical path {CRITICAL_PATH:.2f} s; "
          f"median of {repeat} runs, both settings side by side\n")
    header = (f"{'tok/s':>5}  {'mode':<22} {'total s':>8} {'plan s':>7} {'answer s':>8} {'target s':>8} "
              f"{'total/target':>12} {'floor s':>7}")
    print(header)
    with tempfile.TemporaryDirectory() as tmp:
        async with FakeOpenAIServer() as server:
            for rate in rates:
                runs: dict[bool, list[dict[str, float]]] = {True: [], False: []}
                for i in range(repeat):
                    for streamed in ((True, False) if i % 2 == 0 else (False, True)):
                        runs[streamed].append(await one(server, Path(tmp) / f"{rate}-{i}-{streamed}", rate, streamed))
                rows: dict[bool, dict[str, float]] = {}
                for streamed in (False, True):
                    row = {k: statistics.median(r[k] for r in runs[streamed]) for k in ("total", "plan", "answer")}
                    rows[streamed] = row
                for streamed in (False, True):
                    row = rows[streamed]
                    plan_time = row["plan"]
                    target = max(plan_time, CRITICAL_PATH) + row["answer"]
                    floor = plan_time + LATENCY["get_time"] + row["answer"]
                    name = "streamed" if streamed else "parse-after-complete"
                    print(f"{rate:>5.0f}  {name:<22} {row['total']:>8.2f} {plan_time:>7.2f} {row['answer']:>8.2f} "
                          f"{target:>8.2f} {row['total'] / target:>12.3f} {floor:>7.2f}")
                print(f"{'':>5}  streamed / parse-after-complete: {rows[True]['total'] / rows[False]['total']:.3f}\n")


def _args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rates", type=float, nargs="+", default=[30.0, 60.0])
    parser.add_argument("--repeat", type=int, default=3)
    return parser.parse_args(argv)


if __name__ == "__main__":
    args = _args(sys.argv[1:])
    asyncio.run(main(args.rates, args.repeat))
