"""Every setting's names: its section and key, its ``SABER_*`` variable, and its flat name from
from before the sections (``llm_model`` for ``llm.model``), which is still read, with a warning.

``FLAT_NAMES`` is the one table of renames: the settings loader reads old spellings with it, and
the codemod that rewrote ``settings.llm_model`` into ``settings.llm.model`` across the code base
is driven by it.
"""

from __future__ import annotations

import dataclasses
from typing import Any, get_args, get_origin

from pydantic import BaseModel

from saber.config.graph import GraphConfig
from saber.config.sections import (
    AgentSettings,
    ApprovalSettings,
    ClusterSettings,
    DatabaseSettings,
    EmbeddingSettings,
    ExecSettings,
    FilesSettings,
    HistorySettings,
    LLMSettings,
    MCPSettings,
    MemorySettings,
    OtelSettings,
    PlannerSettings,
    RagSettings,
    RedisSettings,
    SearchSettings,
    ServerSettings,
    ToolsSettings,
    WeatherSettings,
)

SECTIONS: dict[str, type[Any]] = {
    "llm": LLMSettings,
    "agent": AgentSettings,
    "database": DatabaseSettings,
    "redis": RedisSettings,
    "search": SearchSettings,
    "weather": WeatherSettings,
    "tools": ToolsSettings,
    "embedding": EmbeddingSettings,
    "rag": RagSettings,
    "graph": GraphConfig,
    "files": FilesSettings,
    "exec": ExecSettings,
    "approval": ApprovalSettings,
    "history": HistorySettings,
    "memory": MemorySettings,
    "planner": PlannerSettings,
    "server": ServerSettings,
    "mcp": MCPSettings,
    "cluster": ClusterSettings,
    "otel": OtelSettings,
}
"""Section name (the ``[table]`` of saber.toml, the ``SABER_<SECTION>_`` prefix) → its model."""

TOP_LEVEL = ("home",)
"""Settings outside any section."""

HOMED: dict[str, tuple[str, str]] = {
    "request_deadline": ("agent", "request_deadline"),
    "max_query_chars": ("agent", "max_query_chars"),
    "max_answer_chars": ("agent", "max_answer_chars"),
    "database_url": ("database", "url"),
    "db_pool_size": ("database", "pool_size"),
    "redis_url": ("redis", "url"),
    "tavily_api_key": ("search", "tavily_api_key"),
    "searxng_url": ("search", "searxng_url"),
    "tool_timeout": ("tools", "timeout"),
    "default_city": ("tools", "default_city"),
    "default_timezone": ("tools", "default_timezone"),
    "max_tool_result_chars": ("graph", "max_result_chars"),
    "graph_max_retries": ("graph", "max_attempts"),
}
"""Flat names from before the sections that are not ``<section>_<key>`` of their new place."""


def section_keys(section: str) -> tuple[str, ...]:
    model = SECTIONS[section]
    if dataclasses.is_dataclass(model):
        return tuple(field.name for field in dataclasses.fields(model))
    return tuple(model.model_fields)


def section_annotations(section: str) -> dict[str, Any]:
    model = SECTIONS[section]
    if dataclasses.is_dataclass(model):
        return {field.name: field.type for field in dataclasses.fields(model)}
    return {name: field.annotation for name, field in model.model_fields.items()}


def _flat_names() -> dict[str, tuple[str, str]]:
    out = {f"{section}_{key}": (section, key) for section in SECTIONS for key in section_keys(section)}
    for old, place in HOMED.items():
        if old in out and out[old] != place:
            raise AssertionError(f"flat name {old} would mean both {out[old]} and {place}")
        out[old] = place
    return out


FLAT_NAMES: dict[str, tuple[str, str]] = _flat_names()
"""Flat name (``llm_model``, ``tool_timeout``) → (section, key): every old spelling still read."""


def variable(section: str, key: str) -> str:
    """The ``SABER_*`` variable of a setting: ``SABER_LLM_MODEL`` for ``llm.model``."""
    return f"SABER_{section}_{key}".upper()


OLD_VARIABLES: dict[str, tuple[str, str]] = {
    f"SABER_{flat}".upper(): place for flat, place in FLAT_NAMES.items() if flat != f"{place[0]}_{place[1]}"
}
"""Variables from before the sections that are not the setting's variable now (``SABER_TOOL_TIMEOUT``), still read."""


def env_shape(annotation: Any) -> str:
    """How a variable for a setting of this type is read: ``text``, ``list`` (of plain values),
    ``mapping`` or ``json`` (a list of tables)."""
    origin = get_origin(annotation)
    if origin is dict:
        return "mapping"
    if origin is list:
        (item,) = get_args(annotation)
        return "json" if isinstance(item, type) and issubclass(item, BaseModel) else "list"
    return "text"
