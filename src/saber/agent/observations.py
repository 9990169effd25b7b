"""Turning what a graph run found into text: for the generator model, and for no-model answers."""

from __future__ import annotations

import json
from typing import Any

from saber.agent.prompts import Lang
from saber.graph.node import Node, NodeStatus
from saber.graph.result import RunResult


def as_text(result: Any, limit: int = 4000) -> str:
    """A tool or agent result as text a model (or person) can read."""
    if result is None:
        return ""
    text = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False, indent=1, default=str)
    return text if len(text) <= limit else text[:limit] + " …"


def describe_node(node: Node) -> str:
    what = node.target
    params = json.dumps(node.params, ensure_ascii=False) if node.params else ""
    goal = f" — {node.goal}" if node.goal and node.type == "sub_agent" else ""
    return f"{node.id} {what}{'(' + params + ')' if params else ''}{goal}"


def observations(run: RunResult, lang: Lang) -> str:
    """Every node: what it called, its status, and its result or error."""
    ok, failed = ("结果", "失败") if lang == "zh" else ("result", "failed")
    blocks: list[str] = []
    for node in run.nodes.values():
        head = f"[{describe_node(node)}] {node.status.value}"
        if node.status is NodeStatus.DONE:
            blocks.append(f"{head}\n{ok}: {as_text(node.result)}")
        elif node.status is NodeStatus.SKIPPED and node.error is None:
            blocks.append(f"{head} (race lost)")
        else:
            blocks.append(f"{head}\n{failed}: {node.error or node.status.value}")
    return "\n\n".join(blocks)
