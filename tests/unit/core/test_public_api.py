"""The public API: what DESIGN.md promises importable, and nothing private in __all__."""

from __future__ import annotations

import importlib

import pytest

import saber


def test_design_contracts_import() -> None:
    from saber import Agent, Settings
    from saber.graph import GraphConfig, GraphRuntime, Node, NodeStatus, TaskGraph
    from saber.planner import PlanParseError, parse_plan
    from saber.tools import Param, Tool, ToolArgumentError, ToolError, ToolRegistry, tool

    assert Agent.__name__ == "Agent" and Settings.__name__ == "Settings"
    assert all(x is not None for x in (GraphConfig, GraphRuntime, Node, NodeStatus, TaskGraph, PlanParseError,
                                       parse_plan, Param, Tool, ToolArgumentError, ToolError, ToolRegistry, tool))


@pytest.mark.parametrize("module", ["saber", "saber.tools", "saber.llm", "saber.graph", "saber.planner", "saber.rag",
                                    "saber.agent", "saber.testing"])
def test_all_names_exist_and_are_public(module: str) -> None:
    mod = importlib.import_module(module)
    assert mod.__all__, f"{module} has no __all__"
    for name in mod.__all__:
        assert getattr(mod, name) is not None
        assert not name.startswith("_") or name == "__version__"


def test_unknown_attribute_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        saber.Nope  # noqa: B018
