"""Failed generations: empty, cut, or the prompt echoed (shaped like SmolLM2-135M's answers)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from saber.agent import answer_check
from saber.agent.answer_check import generation_failure
from saber.agent.prompts import GENERATE
from saber.llm.types import Message, StreamEnd

OBS = '[n1 get_time({"city": "Tokyo"})] done\nresult: 2026-12-01 22:48 JST\n\n[n2 get_weather({"city": "Paris"})] done\nresult: Paris: 7°C, light rain, wind 12 km/h from the south-west, humidity 81%'
QUERY = "What time is it in Tokyo and what's the weather in Paris?"
PROMPT = [Message.system(GENERATE["en"]), Message.user(f"The user's question: {QUERY}\n\nSteps run and their results:\n{OBS}")]
ZH_PROMPT = [Message.system(GENERATE["zh"]), Message.user(f"用户的问题：现在几点，北京天气怎么样\n\n执行的步骤与结果：\n{OBS}")]
STOP = StreamEnd(finish_reason="stop")


def test_an_echo_of_the_prompt_is_a_failed_generation() -> None:
    echo = f"The user's question: {QUERY}\n\nSteps run and their results: n1 get_time Tokyo done"
    assert generation_failure(echo, PROMPT, STOP) == 'the model echoed its prompt (it wrote "the user\'s question:")'
    assert generation_failure("用户的问题：现在几点\n执行的步骤与结果：n1 完成", ZH_PROMPT, STOP) is not None


def test_labels_in_the_middle_of_an_answer_count_when_two_are_echoed() -> None:
    text = f"Here you go.\nThe user's question: {QUERY}\nSteps run and their results: all done."
    assert generation_failure(text, PROMPT, STOP) is not None


def test_echoed_instructions_are_a_failed_generation() -> None:
    assert generation_failure(GENERATE["en"][:160], PROMPT, STOP) == "the model echoed its instructions"


def test_a_long_copy_of_the_prompt_is_a_failed_generation() -> None:
    assert generation_failure(OBS, PROMPT, STOP) == "the model copied its prompt instead of answering"


def test_empty_and_cut_answers_are_failed_generations() -> None:
    assert generation_failure("  \n", PROMPT, STOP) == "the model returned an empty answer"
    assert generation_failure("In Tokyo it is", PROMPT, StreamEnd(finish_reason="length")) == "the model reached its token limit"
    cut = StreamEnd(finish_reason="cut", cut='the model kept repeating "你好！"')
    assert generation_failure("你好！你好！", PROMPT, cut) == 'the model kept repeating "你好！"'


def test_a_real_answer_that_quotes_the_results_is_fine() -> None:
    good = "It is 22:48 in Tokyo (2026-12-01 22:48 JST). In Paris it is 7°C with light rain."
    assert generation_failure(good, PROMPT, STOP) is None
    assert generation_failure("东京现在是晚上 10 点 48 分；巴黎 7°C，小雨。", ZH_PROMPT, STOP) is None
    assert generation_failure("Note: the weather service was slow.", PROMPT, None) is None


@given(st.text("ab \n", max_size=80), st.text("ab \n", max_size=300))
def test_the_share_of_an_answer_found_in_a_prompt_is_counted_against_every_piece_of_it(text: str, source: str) -> None:
    pieces = answer_check._shingles(text)
    if pieces:
        expected = len(pieces & answer_check._shingles(source)) / len(pieces)
        assert answer_check._share(pieces, answer_check._flat(source)) == expected
