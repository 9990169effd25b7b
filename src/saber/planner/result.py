"""What parsing a plan yields: ``ParsedPlan``, or ``PlanParseError`` when nothing is usable."""

from __future__ import annotations

from dataclasses import dataclass, field

from saber.graph.node import Node


@dataclass(frozen=True, kw_only=True)
class ParsedPlan:
    """A validated plan and how it was read.

    An empty ``nodes`` list is a real answer ("no tool is needed"), distinct from junk, which
    raises ``PlanParseError`` instead.
    """

    nodes: list[Node]
    format: str
    """The shape recognised: "ideal", "single_object", "wrapped", "legacy", "function_call",
    "openai_tool_calls", "react_action", "hermes", "qwen_xml", "llama_python_tag", "pythonic", "mistral",
    "deepseek", "doubao", "llmcompiler", "rules" — or "repaired" when the JSON had to be repaired
    (``shape`` then says which shape the repaired JSON had)."""
    warnings: list[str] = field(default_factory=list)
    """Every change made on the way: repairs, dropped nodes and why, removed or broken edges."""
    shape: str = ""
    """The underlying shape, also when ``format`` is "repaired"."""
    repaired: bool = False
    cut: str | None = None
    """Why the plan read is not all the model wrote or meant, in words (the text ends inside the
    plan; it has more nodes than allowed), or None."""
    dropped_nodes: int = 0
    """Nodes left out because the plan was cut: a last node the text began but did not finish,
    and nodes past the ``max_nodes`` cap."""
    last_node_closed: bool = False
    """The text closes the last node (a JSON object whose closing brace arrived), so more text
    cannot change it. False when that cannot be told (other shapes): a reader of a streaming
    output then waits for the next node or the end."""
    answer: str | None = None
    """The reply the model wrote ahead, for when every step succeeds: its placeholders are the
    plan's node ids in the canonical ``${id}`` form (``answer_template``). None when the model
    wrote none, or it was dropped (a warning says why)."""

    @property
    def empty(self) -> bool:
        return not self.nodes


class PlanParseError(ValueError):
    """Nothing usable in a planner's output: no plan shape at all, or every node was invalid."""

    def __init__(self, message: str, *, warnings: list[str] | None = None, text: str = "") -> None:
        super().__init__(message)
        self.warnings = list(warnings or [])
        self.text = text[:2000]
