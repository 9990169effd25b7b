from __future__ import annotations

import pytest

from saber.graph.placeholders import PlaceholderError, references, substitute_placeholders


def test_whole_value_placeholder_keeps_the_result_type() -> None:
    out = substitute_placeholders({"amount": "${n1}", "to": "CNY"}, {"n1": 12.5})
    assert out == {"amount": 12.5, "to": "CNY"}


def test_every_named_form_is_substituted_but_never_a_bare_number() -> None:
    results = {"n1": "Paris", "n2": {"temp": 21}}
    params = {"a": "$n1", "b": "{{n1}}", "c": "${n1}", "d": "weather in $n1 is ${n2.temp} degrees", "e": ["$1"]}
    out = substitute_placeholders(params, results)
    assert out == {"a": "Paris", "b": "Paris", "c": "Paris", "d": "weather in Paris is 21 degrees", "e": ["$1"]}


def test_structured_result_inside_text_is_rendered_as_json() -> None:
    out = substitute_placeholders({"q": "summarise ${n1}"}, {"n1": {"k": "值"}})
    assert out == {"q": 'summarise {"k": "值"}'}


def test_path_into_a_json_text_result() -> None:
    out = substitute_placeholders({"city": "${n1.city}"}, {"n1": '{"city": "Lyon"}'})
    assert out == {"city": "Lyon"}


def test_dollar_amounts_that_name_no_node_are_left_alone() -> None:
    out = substitute_placeholders({"q": "laptops under $1000", "r": "$n1"}, {"n1": "x"})
    assert out == {"q": "laptops under $1000", "r": "x"}


def test_missing_result_names_the_node() -> None:
    with pytest.raises(PlaceholderError, match="n2"):
        substitute_placeholders({"q": "${n2}"}, {"n1": "x"})
    with pytest.raises(PlaceholderError, match="'city'"):
        substitute_placeholders({"q": "${n1.city}"}, {"n1": {"town": "x"}})


def test_references_lists_canonical_placeholders_once() -> None:
    assert references({"a": "${n1} and ${n2.x}", "b": ["${n1}"]}) == ["n1", "n2"]
