"""The graph runtime stands alone: running a graph loads nothing of the planner or the agent (the
runtime owns placeholder substitution), and a placeholder error is recognised by its type."""

from __future__ import annotations

import json
import subprocess
import sys

from saber.graph.placeholders import PlaceholderError
from saber.graph.retry import classify


def test_the_runtime_imports_no_planner_or_agent_module() -> None:
    probe = ("import json, sys, asyncio\n"
             "from saber.graph import GraphRuntime, Node\n"
             "from saber.tools import tool\n"
             "t = tool(lambda: 'ok', name='ok', description='ok')\n"
             "r = asyncio.run(GraphRuntime([Node(id='n1', tool='ok'), Node(id='n2', tool='ok', params={}, "
             "depends_on=['n1'])], {'ok': t}).run())\n"
             "assert r.status == 'done', r\n"
             "print(json.dumps(sorted(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout.splitlines()[-1])
    assert [m for m in loaded if m.startswith(("saber.planner", "saber.agent"))] == []


def test_a_placeholder_error_is_classified_by_its_type() -> None:
    failure = classify(PlaceholderError("n2: ${n1} has no result"))
    assert failure.retryable is False and failure.message == "n2: ${n1} has no result"

    class PlaceholderErrorLookalike(LookupError):
        pass

    assert classify(PlaceholderErrorLookalike("x")).message.startswith("PlaceholderErrorLookalike")
