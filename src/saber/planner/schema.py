"""The plan's JSON Schema, for endpoints with structured output (``response_format``).

The root is an object ``{"plan": [...]}`` because OpenAI's json_schema mode wants an object;
``parse_plan`` reads that wrapper like any other. Not strict: each tool's params differ.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from saber.llm.types import ResponseFormat
from saber.tools.base import Tool


def plan_json_schema(tools: Mapping[str, Tool], agents: Mapping[str, str] | None = None) -> dict[str, Any]:
    """``{"plan": [node, ...], "answer": "…"}`` with tool and agent names as enums; ``answer`` (the
    reply written ahead, see ``answer_template``) is optional."""
    node: dict[str, Any] = {
        "type": "object",
        "properties": {
            "id": {"type": "string", "pattern": "^n[0-9]+$", "description": "unique id: n1, n2, ..."},
            "type": {"type": "string", "enum": ["tool", "sub_agent"]},
            "tool": {"type": ["string", "null"], "enum": [*sorted(tools), None]},
            "agent": {"type": ["string", "null"], "enum": [*sorted(agents or {}), None]},
            "goal": {"type": "string"},
            "params": {"type": "object", "description": "the tool's arguments; \"$n1\" stands for node n1's result"},
            "depends_on": {"type": "array", "items": {"type": "string"}},
            "race_group": {"type": ["string", "null"]},
        },
        "required": ["id", "type", "params", "depends_on"],
    }
    return {
        "type": "object",
        "properties": {"plan": {"type": "array", "items": node},
                       "answer": {"type": "string", "description": "only when the reply just states the results: "
                                  "the reply, \"$n1\" where n1's result goes"}},
        "required": ["plan"],
        "additionalProperties": False,
    }


def plan_response_format(tools: Mapping[str, Tool], agents: Mapping[str, str] | None = None) -> ResponseFormat:
    """The JSON Schema response format of a plan, for endpoints with structured output."""
    return ResponseFormat(name="task_plan", schema=plan_json_schema(tools, agents), strict=False)
