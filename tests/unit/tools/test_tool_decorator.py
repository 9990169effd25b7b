"""@tool: JSON Schema from hints, descriptions from docstrings, validation and execution."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Literal

import pytest
from pydantic import BaseModel

from saber.tools import Tool, ToolArgumentError, ToolError, tool


@tool
def google_style(city: str, days: int = 3, unit: Literal["c", "f"] = "c") -> str:
    """Weather forecast for a city.

    Longer explanation of the tool.

    Args:
        city: City name, e.g. Beijing.
        days: Number of days to forecast.
        unit: Temperature unit.
    """
    return f"{city}:{days}:{unit}"


@tool
def numpy_style(query: str, limit: int = 5) -> list[str]:
    """Search the notes.

    Parameters
    ----------
    query : str
        Words to look for.
    limit : int
        Most results to return.
    """
    return [query] * limit


@tool
def sphinx_style(path: str, recursive: bool = False) -> str:
    """List a folder.

    :param path: Folder to list.
    :param recursive: Descend into sub-folders.
    """
    return f"{path}:{recursive}"


class Filters(BaseModel):
    tag: str
    min_score: float = 0.0


@tool(name="find_docs", race_group="search")
async def find(filters: Filters, tags: list[str] | None = None) -> dict[str, object]:
    """Find documents by filter."""
    await asyncio.sleep(0)
    return {"tag": filters.tag, "min": filters.min_score, "tags": tags}


def test_schema_from_hints_and_google_docstring() -> None:
    schema = google_style.schema
    assert google_style.name == "google_style"
    assert google_style.description.startswith("Weather forecast for a city.")
    assert "Longer explanation" in google_style.description
    assert schema["required"] == ["city"]
    assert schema["properties"]["city"] == {"type": "string", "description": "City name, e.g. Beijing."}
    assert schema["properties"]["days"]["type"] == "integer"
    assert schema["properties"]["days"]["default"] == 3
    assert schema["properties"]["unit"]["enum"] == ["c", "f"]
    assert "title" not in json.dumps(schema)


def test_numpy_and_sphinx_docstrings() -> None:
    assert numpy_style.schema["properties"]["query"]["description"] == "Words to look for."
    assert numpy_style.schema["properties"]["limit"]["description"] == "Most results to return."
    assert numpy_style.description == "Search the notes."
    assert sphinx_style.schema["properties"]["recursive"]["description"] == "Descend into sub-folders."
    assert sphinx_style.schema["properties"]["recursive"]["type"] == "boolean"


def test_params_view() -> None:
    params = {p.name: p for p in google_style.parameters}
    assert params["city"].required and params["city"].type == "string"
    assert not params["days"].required and params["days"].default == 3 and params["days"].has_default
    assert params["unit"].enum == ["c", "f"]


def test_validate_coerces_safe_values() -> None:
    assert google_style.validate({"city": "Paris", "days": "7"}) == {"city": "Paris", "days": 7, "unit": "c"}
    assert sphinx_style.validate({"path": "/tmp", "recursive": "true"})["recursive"] is True


def test_validate_names_missing_and_bad_fields() -> None:
    with pytest.raises(ToolArgumentError) as info:
        google_style.validate({"days": "many"})
    err = info.value
    assert isinstance(err, ToolError) and not err.retryable
    assert "city: field required" in str(err)
    assert any(e.startswith("days:") for e in err.errors)


def test_validate_rejects_non_object() -> None:
    with pytest.raises(ToolArgumentError, match="arguments must be an object"):
        google_style.validate(["Paris"])  # type: ignore[arg-type]


async def test_sync_tool_runs_in_worker_thread() -> None:
    seen: list[str] = []

    @tool
    def where() -> str:
        """Name the thread."""
        seen.append(threading.current_thread().name)
        return "ok"

    assert await where.run({}) == "ok"
    assert seen and seen[0] != threading.main_thread().name


async def test_async_tool_with_nested_model_argument() -> None:
    assert find.name == "find_docs" and find.race_group == "search"
    assert "$defs" in find.schema or "properties" in find.schema["properties"]["filters"]
    result = await find.run({"filters": {"tag": "k8s", "min_score": "0.5"}})
    assert result == {"tag": "k8s", "min": 0.5, "tags": None}
    with pytest.raises(ToolArgumentError, match=r"filters\.tag: field required"):
        await find.run({"filters": {}})


def test_renderings() -> None:
    oa = google_style.to_openai()
    assert oa["type"] == "function" and oa["function"]["name"] == "google_style"
    assert oa["function"]["parameters"] is google_style.schema
    an = google_style.to_anthropic()
    assert an["input_schema"] is google_style.schema and an["name"] == "google_style"
    line = google_style.to_prompt_line()
    assert line.startswith("- google_style: Weather forecast for a city. [params: ")
    assert "city(string, required; City name, e.g. Beijing.)" in line
    assert "days(integer, default 3;" in line


def test_to_dict_never_contains_execute() -> None:
    data = google_style.to_dict()
    json.dumps(data)
    assert "execute" not in data and "validator" not in data
    assert [p["name"] for p in data["parameters"]] == ["city", "days", "unit"]


def test_invalid_names_rejected() -> None:
    with pytest.raises(ValueError, match="invalid tool name"):
        Tool(name="bad name!", description="", execute=lambda a: a)


def test_misspelled_arguments_are_named_and_other_extras_ignored() -> None:
    with pytest.raises(ToolArgumentError, match="dayz: unknown field \\(did you mean 'days'\\?\\)"):
        google_style.validate({"city": "Paris", "dayz": 5})
    assert google_style.validate({"city": "Paris", "reason": "the user asked"}) == {"city": "Paris", "days": 3, "unit": "c"}


async def test_a_sync_tool_raising_stop_iteration_fails_instead_of_hanging() -> None:
    @tool
    def exhausted() -> str:
        """Calls next() on an empty iterator."""
        return str(next(iter([])))

    with pytest.raises(RuntimeError, match="raised StopIteration"):
        await asyncio.wait_for(exhausted.run({}), 10)
