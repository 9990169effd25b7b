"""The public API: what DESIGN.md promises importable, what each package exports (changed only on
purpose), that every exported class and function says what it is for, that types ship
(``py.typed``), and that ``import saber`` stays light."""

from __future__ import annotations

import importlib
import inspect
import json
import subprocess
import sys
from pathlib import Path

import pytest

import saber
from saber.agent import Agent

PUBLIC = {
    "saber": {
        "Agent", "Answer", "ChatModel", "ConfigError", "Event", "EventBus", "GraphConfig", "GraphRuntime",
        "MemoryService", "Message", "ModelError", "Node", "NodeStatus", "OpenAIChatModel", "Param", "RagEngine",
        "RunResult", "Settings", "TaskGraph", "Tool", "ToolArgumentError", "ToolError", "ToolRegistry", "__version__",
        "tool",
    },
    "saber.llm": {
        "ChatModel", "Completion", "Message", "ModelError", "NoModel", "OpenAIChatModel", "ResponseFormat",
        "RetryingModel", "StreamChunk", "StreamEnd", "TextDelta", "ToolCall", "ToolCallDelta", "Usage",
        "model_from_settings",
    },
    "saber.rag": {
        "ChunkingConfig", "Document", "DocumentNotFound", "EmbeddingError", "Embedder", "EmptyDocument",
        "FileTooLarge", "HashingEmbedder", "Hit", "IngestResult", "KnowledgeStore", "LocalE5Embedder", "LocalUSEEmbedder",
        "OpenAIEmbedder", "RagEngine", "RagError", "Reranker", "SQLiteStore", "UnsupportedFileType",
        "embedder_from_settings", "engine_from_settings", "knowledge_tools", "open_store",
    },
    "saber.agent.memory": {
        "HistoryEntry", "MemoryRecord", "MemoryResult", "MemoryService", "MemoryStore", "MemoryStoreError",
        "PostgresMemoryStore", "RecalledMemory", "SQLiteMemoryStore",
    },
}
DOCUMENTED = ("saber", "saber.tools", "saber.graph", "saber.llm", "saber.rag", "saber.agent", "saber.agent.memory",
              "saber.planner", "saber.testing", "saber.approvals", "saber.mcp", "saber.db")


@pytest.mark.parametrize("package", sorted(PUBLIC))
def test_each_package_exports_exactly_its_public_names(package: str) -> None:
    module = importlib.import_module(package)
    assert set(module.__all__) == PUBLIC[package]
    assert len(module.__all__) == len(set(module.__all__))


@pytest.mark.parametrize("package", DOCUMENTED)
def test_every_exported_class_and_function_has_a_docstring(package: str) -> None:
    module = importlib.import_module(package)
    missing = []
    for name in module.__all__:
        obj = getattr(module, name)  # every exported name resolves
        if inspect.isclass(obj):
            doc = obj.__dict__.get("__doc__") or ""
            if not doc.strip() or doc.startswith(f"{obj.__name__}("):  # a dataclass's generated signature
                missing.append(name)
        elif inspect.isfunction(obj) and not (obj.__doc__ or "").strip():
            missing.append(name)
    assert missing == []


def test_the_top_level_names_are_the_real_objects() -> None:
    from saber.graph.runtime import GraphRuntime
    from saber.llm.base import ChatModel

    assert saber.GraphRuntime is GraphRuntime and saber.ChatModel is ChatModel and saber.Agent is Agent
    assert sorted(dir(saber)) == sorted(saber.__all__)
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        saber.Nope  # noqa: B018


def test_types_ship_with_the_package() -> None:
    assert (Path(saber.__file__).parent / "py.typed").is_file()


def test_ask_takes_the_same_keyword_parameters_as_stream() -> None:
    ask = inspect.signature(Agent.ask).parameters
    stream = inspect.signature(Agent.stream).parameters
    assert list(ask) == list(stream)
    assert all(ask[n].kind == stream[n].kind and ask[n].default == stream[n].default for n in stream)
    assert "options" not in ask  # no **options swallowing a misspelt keyword


def test_import_saber_loads_nothing_heavy() -> None:
    probe = "import json, sys, saber; print(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    loaded = set(json.loads(done.stdout))
    heavy = ("numpy", "httpx", "openai", "pydantic", "saber.agent", "saber.graph", "saber.llm", "saber.rag")
    assert sorted(m for m in loaded if any(m == h or m.startswith(h + ".") for h in heavy)) == []


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


@pytest.mark.parametrize("package", ["saber", "saber.planner", "saber.rag", "saber.db"])
def test_a_lazily_exported_name_is_never_shadowed_by_a_submodule(package: str) -> None:
    """These packages import a name's module on first use. Had a name the same spelling as a
    submodule, importing that submodule first (as any caller may) would bind the module to it."""
    probe = f"""
import importlib, json, pkgutil, types
package = importlib.import_module({package!r})
for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
    importlib.import_module(info.name)
print(json.dumps(sorted(n for n in package.__all__ if isinstance(getattr(package, n), types.ModuleType))))
"""
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == []
