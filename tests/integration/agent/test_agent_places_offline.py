"""Issue #33 item 1 through the whole agent, no model and the geocoder unreachable: ten IANA
exemplar cities outside the hand table get their time (five asked in Chinese, five in English);
an ambiguous name is said with its clocks; an unknown one says the geocoder could not be reached."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from saber.agent import Agent
from saber.events import ToolCallEvent

ASKED = [
    ("现在霍巴特几点了", "Australia/Hobart", "霍巴特现在是"),
    ("努克现在几点？", "America/Nuuk", "努克现在是"),
    ("温得和克时间", "Africa/Windhoek", "温得和克现在是"),
    ("第比利斯现在几点了", "Asia/Tbilisi", "第比利斯现在是"),
    ("蒙得维的亚现在几点", "America/Montevideo", "蒙得维的亚现在是"),
    ("What time is it in Reykjavik?", "Atlantic/Reykjavik", "In Reykjavik (雷克雅未克), Iceland it is"),
    ("What time is it in Anchorage?", "America/Anchorage", "In Anchorage (安克雷奇), United States it is"),
    ("Halifax time now", "America/Halifax", "In Halifax (哈利法克斯), Canada it is"),
    ("current time in Noumea", "Pacific/Noumea", "In Noumea (努美阿), New Caledonia it is"),
    ("what's the time in Winnipeg", "America/Winnipeg", "In Winnipeg (温尼伯), Canada it is"),
]


def calls(answer: object) -> list[ToolCallEvent]:
    return [e for e in answer.events if isinstance(e, ToolCallEvent)]  # type: ignore[attr-defined]


@pytest.mark.parametrize(("query", "zone", "said"), ASKED)
async def test_exemplar_cities_get_their_time_with_no_model_and_no_network(
        make_agent: Callable[..., Agent], query: str, zone: str, said: str) -> None:
    answer = await make_agent(None).ask(query, user_id="u1")
    (call,) = calls(answer)
    assert call.tool_name == "get_time" and call.error is None and zone in str(call.tool_result)
    assert said in answer.answer and "unreachable" not in answer.answer and "无法访问" not in answer.answer


@pytest.mark.parametrize("query", ["What time is it in Salvador?", "现在CST几点"])
async def test_an_ambiguous_name_is_said_not_guessed(make_agent: Callable[..., Agent], query: str) -> None:
    answer = await make_agent(None).ask(query, user_id="u1")
    (call,) = calls(answer)
    assert call.error is not None and "ambiguous place" in call.error
    assert "ambiguous" in answer.answer or "歧义" in answer.answer or "may mean" in answer.answer, answer.answer


@pytest.mark.parametrize(("query", "said"), [("What time is it in Gotham City?", "could not be reached"),
                                             ("现在哥谭市几点了", "无法访问")])
async def test_an_unknown_place_says_the_geocoder_is_unreachable(make_agent: Callable[..., Agent], query: str,
                                                                 said: str) -> None:
    answer = await make_agent(None).ask(query, user_id="u1")
    (call,) = calls(answer)
    assert call.error is not None and said in answer.answer
    assert "Current time in" not in answer.answer
