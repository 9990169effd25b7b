from __future__ import annotations

from saber.llm.text_tool_calls import extract_text_tool_calls
from saber.llm.types import ToolCall


def _calls(text: str) -> list[tuple[str, dict[str, object]]]:
    found = extract_text_tool_calls(text)
    assert found is not None
    return [(c.name, c.arguments) for c in found.calls]


def test_plain_json_and_prose_are_not_a_dialect() -> None:
    assert extract_text_tool_calls('[{"name": "get_time", "arguments": {}}]') is None
    assert extract_text_tool_calls("Hello there") is None


def test_hermes_keeps_text_outside_the_calls_and_notes_a_missing_close() -> None:
    found = extract_text_tool_calls('Let me check.\n<tool_call>\n{"name": "get_time", "arguments": {"timezone": "UTC"}}')
    assert found is not None and found.format == "hermes"
    assert found.calls == (ToolCall(id="call_0", name="get_time", arguments={"timezone": "UTC"}),)
    assert found.content == "Let me check."
    assert any("</tool_call>" in w for w in found.warnings)


def test_qwen_xml_parameters_keep_text_and_decode_json_objects() -> None:
    text = ("<tool_call>\n<function=f>\n<parameter=n>\n007\n</parameter>\n"
            "<parameter=opts>\n{\"a\": [1, 2]}\n</parameter>\n</function>\n</tool_call>")
    assert _calls(text) == [("f", {"n": "007", "opts": {"a": [1, 2]}})]


def test_llama_python_tag_json_and_builtin_call_syntax() -> None:
    assert _calls('<|python_tag|>{"name": "a", "parameters": {"x": 1}}; {"name": "b", "parameters": {}}<|eom_id|>') == [
        ("a", {"x": 1}), ("b", {})]
    assert _calls('<|python_tag|>brave_search.call(query="x y")') == [("brave_search", {"query": "x y"})]


def test_mistral_both_tokenizer_versions_and_call_ids() -> None:
    assert _calls('[TOOL_CALLS] [{"name": "a", "arguments": {"k": "v"}}]') == [("a", {"k": "v"})]
    found = extract_text_tool_calls('[TOOL_CALLS]a[CALL_ID]abc123XYZ[ARGS]{"k": 1}[TOOL_CALLS]b[ARGS]{}')
    assert found is not None
    assert [(c.id, c.name, c.arguments) for c in found.calls] == [("abc123XYZ", "a", {"k": 1}), ("call_1", "b", {})]


def test_deepseek_v3_fenced_arguments_and_v31_inline() -> None:
    v3 = '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n```json\n{"a": 1}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>'
    v31 = '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>f<｜tool▁sep｜>{"a": 1}<｜tool▁call▁end｜><｜tool▁calls▁end｜>'
    assert _calls(v3) == _calls(v31) == [("f", {"a": 1})]


def test_doubao_and_broken_arguments_are_repaired_with_a_warning() -> None:
    found = extract_text_tool_calls("<|FunctionCallBegin|>[{'name': 'f', 'parameters': {'a': 'b',}}]<|FunctionCallEnd|>")
    assert found is not None and found.format == "doubao"
    assert [(c.name, c.arguments) for c in found.calls] == [("f", {"a": "b"})]
    assert found.warnings


def test_markers_without_a_readable_call_are_reported() -> None:
    found = extract_text_tool_calls("<tool_call>not json at all</tool_call>")
    assert found is not None and found.calls == ()
    assert any("without a readable call" in w for w in found.warnings)


def test_llama4_python_start_and_pythonic_lists_after_the_python_tag() -> None:
    found = extract_text_tool_calls('Checking.<|python_start|>[get_weather(city="Paris"), get_time(timezone="UTC")]<|python_end|><|eom|>')
    assert found is not None and found.format == "pythonic" and found.content == "Checking."
    assert [(c.name, c.arguments) for c in found.calls] == [("get_weather", {"city": "Paris"}), ("get_time", {"timezone": "UTC"})]
    tagged = extract_text_tool_calls("<|python_tag|>[a(x=1), b(y=[1, 2])]<|eom_id|>")
    assert tagged is not None and tagged.warnings == ()
    assert [(c.id, c.name, c.arguments) for c in tagged.calls] == [("call_0", "a", {"x": 1}), ("call_1", "b", {"y": [1, 2]})]
    code = extract_text_tool_calls("<|python_start|>f(x=__import__('os').getcwd())<|python_end|>")
    assert code is not None and code.calls == () and "not literals" in " ".join(code.warnings)
