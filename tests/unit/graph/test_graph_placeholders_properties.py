"""Placeholders under generated input: a node's result reaches the next node's params intact, in
every form a model writes, and text that names no node (a price, a template) is never touched."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from saber.graph.placeholders import (
    PlaceholderError,
    canonicalise,
    has_placeholder,
    references,
    substitute_placeholders,
)

node_ids = st.from_regex(r"[A-Za-z_](?:[A-Za-z0-9_-]{0,7}[A-Za-z0-9_])?", fullmatch=True)
"""Ids as validation writes them; one ending in "-" is ambiguous in the bare ``$id`` form ("$n1-" is n1)."""
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)
plain_text = st.text(alphabet=st.characters(blacklist_characters="${}"), max_size=40)


@given(node_ids, json_values)
def test_a_value_that_is_only_a_placeholder_becomes_the_result_itself(node: str, result: Any) -> None:
    for form in (f"${{{node}}}", f"{{{{{node}}}}}", f"  ${{ {node} }} "):
        assert substitute_placeholders({"p": form}, {node: result}) == {"p": result}


@given(node_ids, st.text(max_size=20), plain_text, plain_text)
def test_a_placeholder_inside_text_is_replaced_by_the_result_text(node: str, result: str, before: str,
                                                                  after: str) -> None:
    assume((before + after).strip())  # only whitespace around it: the value is the placeholder alone (above)
    out = substitute_placeholders({"q": f"{before}${{{node}}}{after}"}, {node: result})
    assert out == {"q": f"{before}{result}{after}"}


@given(node_ids, json_values.filter(lambda v: not isinstance(v, str)))
def test_a_structured_result_inside_text_is_written_as_json(node: str, result: Any) -> None:
    out = substitute_placeholders({"q": f"data: ${{{node}}}."}, {node: result})
    assert out == {"q": f"data: {json.dumps(result, ensure_ascii=False)}."}


@given(plain_text, st.integers(min_value=0, max_value=10**9))
def test_dollar_amounts_and_plain_text_reach_the_tool_unchanged(text: str, amount: int) -> None:
    params = {"q": f"{text} under ${amount}", "r": [f"${{{amount}}}", text], "s": f"$ {amount}"}
    assert substitute_placeholders(params, {"n1": "x", str(amount): "y"}) == params
    assert references(params) == [] and not has_placeholder(params)


@given(node_ids, node_ids)
def test_a_name_that_is_no_dependency_is_left_alone(node: str, other: str) -> None:
    if node == other:
        return
    params = {"q": f"price ${other} and {{{{{other}}}}}"}
    assert substitute_placeholders(params, {node: "x"}) == params


@given(st.lists(node_ids, min_size=1, max_size=5))
def test_every_form_is_rewritten_canonically_and_each_node_listed_once_in_order(nodes: list[str]) -> None:
    text = " ".join(f"${n} {{{{{n}}}}} ${{{n}.k}}" for n in nodes)
    canon, found = canonicalise({"a": [text]}, lambda ref: "x_" + ref)
    expected = list(dict.fromkeys("x_" + n for n in nodes))
    assert found == expected
    assert references(canon) == expected
    assert canon == {"a": [" ".join(f"${{x_{n}}} ${{x_{n}}} ${{x_{n}.k}}" for n in nodes)]}


def test_canonicalise_keeps_what_resolves_to_no_node() -> None:
    canon, found = canonicalise({"q": "cost $5, ${n1}, {{n2.city}}", "k": 3}, lambda ref: None)
    assert canon == {"q": "cost $5, ${n1}, {{n2.city}}", "k": 3} and found == []


@given(st.lists(st.integers(), min_size=1, max_size=5), st.data())
def test_a_path_into_a_list_takes_that_item_and_past_the_end_is_an_error_naming_it(items: list[int],
                                                                                  data: st.DataObject) -> None:
    index = data.draw(st.integers(min_value=0, max_value=len(items) - 1))
    assert substitute_placeholders({"p": f"${{n1.items.{index}}}"}, {"n1": {"items": items}}) == {"p": items[index]}
    with pytest.raises(PlaceholderError, match=rf"no '{len(items)}' in the result of n1"):
        substitute_placeholders({"p": f"${{n1.items.{len(items)}}}"}, {"n1": {"items": items}})


def test_a_path_into_plain_text_or_a_missing_node_is_refused_with_the_reason() -> None:
    with pytest.raises(PlaceholderError, match="the result of n1 is text, not an object"):
        substitute_placeholders({"p": "${n1.city}"}, {"n1": "Paris"})
    with pytest.raises(PlaceholderError, match=r"placeholder \$\{n9\}: node n9 has no result"):
        substitute_placeholders({"p": "see ${n9}"}, {"n1": "x"})
    with pytest.raises(PlaceholderError, match=r"^placeholder \$\{n1\.x\}: no 'x' in the result of n1$"):
        substitute_placeholders({"p": "${n1.x}"}, {"n1": ["a"]})


def test_nested_params_are_filled_and_other_values_kept() -> None:
    params = {"a": {"b": ["${n1}", 2, None, {"c": "at ${n1}"}]}, "t": True}
    assert substitute_placeholders(params, {"n1": 7}) == {"a": {"b": [7, 2, None, {"c": "at 7"}]}, "t": True}
    assert has_placeholder(params) and has_placeholder(["x", {"k": "${n1.a}"}]) and not has_placeholder({"k": "$n1"})


def test_a_result_json_cannot_write_is_put_into_text_as_its_text() -> None:
    when = datetime(2026, 1, 2, 3, 4, tzinfo=UTC)
    out = substitute_placeholders({"q": "events ${n1}"}, {"n1": {"at": when, "tags": {"a"}}})
    assert out == {"q": 'events {"at": "2026-01-02 03:04:00+00:00", "tags": "{\'a\'}"}'}
