"""Normalising native tool calls (non-streamed lists and streamed fragments) to ToolCall."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from saber.llm import ToolCall
from saber.llm.toolcalls import ToolCallAccumulator, parse_arguments, tool_calls_from_openai


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"city": "Paris", "days": 3}', {"city": "Paris", "days": 3}),
        ({"city": "Paris"}, {"city": "Paris"}),
        ("", {}),
        ("   ", {}),
        (None, {}),
        ('{"city": "Bei', {"_raw": '{"city": "Bei'}),  # cut off mid-call: kept raw, not guessed
        ("{'city': 'Tokyo'}", {"city": "Tokyo"}),  # single quotes, repaired
        ('"{\\"city\\": \\"Rome\\"}"', {"city": "Rome"}),  # double-encoded
    ],
)
def test_parse_arguments_shapes(raw: object, expected: dict[str, object]) -> None:
    assert parse_arguments(raw) == expected


@pytest.mark.parametrize("raw", ["not json at all", "[1, 2]", "42", '"just a string"'])
def test_unusable_arguments_keep_the_raw_text(raw: str) -> None:
    assert parse_arguments(raw) == {"_raw": raw}


@given(st.text(max_size=200))
def test_parse_arguments_never_raises_and_always_gives_a_dict(raw: str) -> None:
    assert isinstance(parse_arguments(raw), dict)


@given(st.dictionaries(st.text(min_size=1, max_size=10), st.integers() | st.text(max_size=10), max_size=5))
def test_parse_arguments_round_trips_json(arguments: dict[str, object]) -> None:
    assert parse_arguments(json.dumps(arguments, ensure_ascii=False)) == arguments


def test_non_streamed_calls_from_dicts_and_objects() -> None:
    class Function:
        name = "get_time"
        arguments = '{"timezone": "UTC"}'

    class Call:
        id = "call_abc"
        function = Function()

    raw = [
        Call(),
        {"id": None, "type": "function", "function": {"name": "get_weather", "arguments": {"city": "北京"}}},
        {"type": "function", "function": {"name": "search_web", "arguments": ""}},
        {"type": "function", "function": {"name": "", "arguments": ""}},  # empty: dropped
    ]
    calls = tool_calls_from_openai(raw)
    assert calls == (
        ToolCall(id="call_abc", name="get_time", arguments={"timezone": "UTC"}),
        ToolCall(id="call_1", name="get_weather", arguments={"city": "北京"}),
        ToolCall(id="call_2", name="search_web", arguments={}),
    )


def test_generated_ids_do_not_collide_with_given_ones() -> None:
    raw = [
        {"function": {"name": "a", "arguments": "{}"}},
        {"id": "call_0", "function": {"name": "b", "arguments": "{}"}},
    ]
    ids = [c.id for c in tool_calls_from_openai(raw)]
    assert len(set(ids)) == 2
    assert "call_0" in ids


def test_none_and_empty_list() -> None:
    assert tool_calls_from_openai(None) == ()
    assert tool_calls_from_openai([]) == ()


def _feed(acc: ToolCallAccumulator, fragments: list[dict[str, object]]) -> list[int]:
    return [acc.add(f.get("index"), call_id=f.get("id"), name=f.get("name"), arguments=f.get("arguments")).index  # type: ignore[arg-type]
            for f in fragments]


def test_streamed_calls_with_distinct_indices() -> None:
    acc = ToolCallAccumulator()
    positions = _feed(acc, [
        {"index": 0, "id": "c1", "name": "get_time", "arguments": ""},
        {"index": 1, "id": "c2", "name": "get_weather", "arguments": '{"ci'},
        {"index": 0, "arguments": '{"timezone": "UTC"}'},
        {"index": 1, "arguments": 'ty": "Paris"}'},
    ])
    assert positions == [0, 1, 0, 1]
    assert acc.finish() == (
        ToolCall(id="c1", name="get_time", arguments={"timezone": "UTC"}),
        ToolCall(id="c2", name="get_weather", arguments={"city": "Paris"}),
    )


def test_index_zero_reused_with_new_ids() -> None:
    acc = ToolCallAccumulator()
    positions = _feed(acc, [
        {"index": 0, "id": "c1", "name": "get_weather", "arguments": '{"city": '},
        {"index": 0, "arguments": '"Paris"}'},
        {"index": 0, "id": "c2", "name": "get_weather", "arguments": '{"city": "Rome"}'},
    ])
    assert positions == [0, 0, 1]
    assert [c.arguments for c in acc.finish()] == [{"city": "Paris"}, {"city": "Rome"}]
    assert [c.id for c in acc.finish()] == ["c1", "c2"]


def test_index_zero_reused_without_ids_new_name_starts_a_call() -> None:
    acc = ToolCallAccumulator()
    _feed(acc, [
        {"index": 0, "name": "get_time", "arguments": '{"timezone": "UTC"}'},
        {"index": 0, "name": "get_weather", "arguments": '{"city": "Oslo"}'},
    ])
    assert acc.finish() == (
        ToolCall(id="call_0", name="get_time", arguments={"timezone": "UTC"}),
        ToolCall(id="call_1", name="get_weather", arguments={"city": "Oslo"}),
    )


def test_index_zero_same_tool_twice_without_ids() -> None:
    acc = ToolCallAccumulator()
    _feed(acc, [
        {"index": 0, "name": "get_weather", "arguments": ""},
        {"index": 0, "arguments": '{"city": "Oslo"}'},
        {"index": 0, "name": "get_weather", "arguments": ""},
        {"index": 0, "arguments": '{"city": "Rome"}'},
    ])
    assert [c.arguments for c in acc.finish()] == [{"city": "Oslo"}, {"city": "Rome"}]


def test_name_repeated_in_every_fragment_is_one_call() -> None:
    acc = ToolCallAccumulator()
    _feed(acc, [
        {"index": 0, "id": "c1", "name": "get_weather", "arguments": '{"city"'},
        {"index": 0, "id": "c1", "name": "get_weather", "arguments": ': "Oslo"}'},
    ])
    assert acc.finish() == (ToolCall(id="c1", name="get_weather", arguments={"city": "Oslo"}),)


def test_arguments_as_objects_and_missing_index() -> None:
    acc = ToolCallAccumulator()
    positions = _feed(acc, [
        {"index": None, "id": "a", "name": "get_time", "arguments": {"timezone": "UTC"}},
        {"index": None, "id": "b", "name": "get_time", "arguments": {"timezone": "Asia/Tokyo"}},
    ])
    assert positions == [0, 1]
    assert [c.arguments for c in acc.finish()] == [{"timezone": "UTC"}, {"timezone": "Asia/Tokyo"}]


def test_broken_streamed_arguments_do_not_crash() -> None:
    acc = ToolCallAccumulator()
    _feed(acc, [
        {"index": 0, "id": "c1", "name": "get_weather", "arguments": '{"city": "Par'},
        {"index": 1, "id": "c2", "name": "search_web", "arguments": "query=python"},
    ])
    first, second = acc.finish()
    assert first.arguments == {"_raw": '{"city": "Par'}, "cut off mid-call: not guessed"
    assert second.arguments == {"_raw": "query=python"}


@pytest.mark.parametrize(("text", "expected"), [
    ("{'city': 'Paris'}", {"city": "Paris"}),
    ('{"city": "Paris",}', {"city": "Paris"}),
    ('{"city": "Paris", "days": 3', {"_raw": '{"city": "Paris", "days": 3'}),
    ('{"content_md": "# Q3\\nRevenue grew because of', {"_raw": '{"content_md": "# Q3\\nRevenue grew because of'}),
    ('{"tags": ["a", "b"', {"_raw": '{"tags": ["a", "b"'}),
])
def test_repairs_mistakes_but_not_truncation(text: str, expected: dict[str, object]) -> None:
    assert parse_arguments(text) == expected


def test_empty_accumulator_finishes_with_nothing() -> None:
    assert ToolCallAccumulator().finish() == ()
