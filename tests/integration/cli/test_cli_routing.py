"""Issue #12 as a user meets it: ``saber ask`` in a real process, no model, the bundled embedder, and
Open-Meteo replaced by a loopback fake (or unreachable)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from saber.testing.openmeteo import FakeOpenMeteo, fake_open_meteo

NOTE_EN = "not written by a language model"
NOTE_ZH = "并非语言模型生成"


def saber(*args: str, home: Path, geo: str, forecast: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SABER_")}
    environ.update({"SABER_HOME": str(home), "SABER_SEARCH_BACKEND": "none", "SABER_WEATHER_GEOCODING_URL": geo,
                    "SABER_WEATHER_FORECAST_URL": forecast, "SABER_TOOLS_TIMEOUT": "5"})
    return subprocess.run([sys.executable, "-m", "saber.cli", *args], env=environ, capture_output=True, text=True,
                          timeout=300)


def events(done: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def of(evts: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e["data"] for e in evts if e["type"] == kind]


@pytest.fixture
def geo() -> Iterator[FakeOpenMeteo]:
    with fake_open_meteo() as service:
        yield service


@pytest.fixture(scope="module")
def kb_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One knowledge base for the module (ingesting embeds every chunk: done once)."""
    tmp_path = tmp_path_factory.mktemp("kb")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "office.md").write_text(
        "# Office handbook\n\n## Wi-Fi\nThe guest Wi-Fi network is ACME-Guest and its password is tulip-harbor-42.\n\n"
        "## Meeting rooms\nThe room Everest seats 20 people and has a video-conference bar.\n", encoding="utf-8")
    (docs / "leave.md").write_text(
        "# 员工休假制度\n\n正式员工入职满一年后享有 10 天带薪年假，工作满五年后增加到 15 天。病假每年 12 天全薪。\n", encoding="utf-8")
    home = tmp_path / "home"
    done = saber("ingest", str(docs), home=home, geo="http://127.0.0.1:9/v1/search", forecast="http://127.0.0.1:9/v1/forecast")
    assert done.returncode == 0, done.stdout + done.stderr
    yield home


@pytest.mark.slow
@pytest.mark.parametrize("query", ["hello", "What is the capital of Australia?", "I live in Tokyo"])
def test_small_talk_and_general_questions_never_dump_passages(kb_home: Path, geo: FakeOpenMeteo, query: str) -> None:
    evts = events(saber("ask", query, "--json", home=kb_home, geo=geo.geocoding_url, forecast=geo.forecast_url))
    route = of(evts, "route")[0]
    assert route["mode"] == "chat", route
    answer = of(evts, "done")[0]["answer"]
    assert "tulip-harbor-42" not in answer and "passage" not in answer and not of(evts, "rag_result")


@pytest.mark.slow
def test_a_relevant_question_is_answered_from_the_knowledge_base_with_the_evidence(kb_home: Path, geo: FakeOpenMeteo) -> None:
    evts = events(saber("ask", "What is the guest Wi-Fi password?", "--json", home=kb_home, geo=geo.geocoding_url,
                        forecast=geo.forecast_url))
    route = of(evts, "route")[0]
    assert route["mode"] == "rag" and route["evidence"]["best"] >= route["evidence"]["threshold"]
    assert "tulip-harbor-42" in of(evts, "done")[0]["answer"]


@pytest.mark.slow
def test_nothing_relevant_is_said_in_the_users_language(kb_home: Path, geo: FakeOpenMeteo) -> None:
    evts = events(saber("ask", "我的笔记里有没有提到咖啡机？", "--json", home=kb_home, geo=geo.geocoding_url,
                        forecast=geo.forecast_url))
    route = of(evts, "route")[0]
    assert route["mode"] == "rag" and route["evidence"]["best"] < route["evidence"]["threshold"]
    answer = of(evts, "done")[0]["answer"]
    assert "没有找到相关" in answer and "tulip" not in answer and "年假" not in answer


@pytest.mark.slow
@pytest.mark.parametrize(("query", "expected", "zone"), [
    ("what time is it in Reykjavik", "Reykjav", "Atlantic/Reykjavik"),
    ("time in UTC+5:30", "UTC+05:30", "UTC+05:30"),
    ("现在UTC时间几点", "UTC", "UTC"),
])
def test_places_and_zones_outside_the_table_are_resolved(tmp_path: Path, geo: FakeOpenMeteo, query: str, expected: str,
                                                         zone: str) -> None:
    evts = events(saber("ask", query, "--json", home=tmp_path, geo=geo.geocoding_url, forecast=geo.forecast_url))
    call = of(evts, "tool_call")[0]
    assert call["tool_name"] == "get_time" and zone in call["tool_result"]
    answer = of(evts, "done")[0]["answer"]
    assert expected in answer and "Asia/Shanghai" not in answer


@pytest.mark.slow
def test_weather_of_a_geocoded_place(tmp_path: Path, geo: FakeOpenMeteo) -> None:
    evts = events(saber("ask", "大理天气怎么样", "--json", home=tmp_path, geo=geo.geocoding_url, forecast=geo.forecast_url))
    assert of(evts, "route")[0]["mode"] == "tool"
    answer = of(evts, "done")[0]["answer"]
    assert answer.startswith("大理（云南，中国）当前天气：多云，12.5°C") and "Current weather" not in answer
    assert "大理" in geo.queries


@pytest.mark.slow
@pytest.mark.parametrize("query", ["what time is it in Atlantis", "亚特兰蒂斯现在几点"])
def test_an_unresolvable_place_is_named_never_replaced_by_a_default(tmp_path: Path, geo: FakeOpenMeteo, query: str) -> None:
    evts = events(saber("ask", query, "--json", home=tmp_path, geo=geo.geocoding_url, forecast=geo.forecast_url))
    answer = of(evts, "done")[0]["answer"]
    place = next(p for p in ("Atlantis", "亚特兰蒂斯", "Narnia") if p in query)
    assert place in answer
    assert "Asia/Shanghai" not in answer and ":" not in answer.split("\n")[0].split(place)[-1][:6]
    assert "°C" not in answer


@pytest.mark.slow
def test_no_place_named_uses_the_default_zone_and_says_so(tmp_path: Path, geo: FakeOpenMeteo) -> None:
    answer = of(events(saber("ask", "现在几点了", "--json", home=tmp_path, geo=geo.geocoding_url,
                             forecast=geo.forecast_url)), "done")[0]["answer"]
    assert "按默认时区 Asia/Shanghai" in answer and answer.count(NOTE_ZH) == 1


@pytest.mark.slow
def test_the_remembered_city_is_used_and_named(tmp_path: Path, geo: FakeOpenMeteo) -> None:
    events(saber("ask", "我住在杭州", "--json", home=tmp_path, geo=geo.geocoding_url, forecast=geo.forecast_url))
    evts = events(saber("ask", "今天天气怎么样", "--json", home=tmp_path, geo=geo.geocoding_url, forecast=geo.forecast_url))
    assert of(evts, "tool_call")[0]["params"] == {"city": "杭州"}
    answer = of(evts, "done")[0]["answer"]
    assert "按你的偏好使用杭州" in answer and answer.startswith("杭州当前天气")


@pytest.mark.slow
@pytest.mark.parametrize(("query", "tool", "places"), [
    ("What time is it in London and Paris?", "get_time", ["London", "Paris"]),
    ("北京和上海的天气", "get_weather", ["北京", "上海"]),
])
def test_several_places_become_several_parallel_nodes_and_all_are_answered(tmp_path: Path, geo: FakeOpenMeteo, query: str,
                                                                            tool: str, places: list[str]) -> None:
    evts = events(saber("ask", query, "--json", home=tmp_path, geo=geo.geocoding_url, forecast=geo.forecast_url))
    assert of(evts, "route")[0]["mode"] == "react"
    nodes = of(evts, "plan")[0]["nodes"]
    assert [(n["tool"], list(n["params"].values())[0]) for n in nodes] == [(tool, p) for p in places]
    assert all(not n["depends_on"] for n in nodes)
    answer = of(evts, "done")[0]["answer"]
    for place in places:
        assert place in answer


@pytest.mark.slow
def test_comparing_two_cities_time_and_weather_covers_all_four(tmp_path: Path, geo: FakeOpenMeteo) -> None:
    evts = events(saber("ask", "比较东京和纽约现在的时间和天气", "--json", home=tmp_path, geo=geo.geocoding_url,
                        forecast=geo.forecast_url))
    nodes = of(evts, "plan")[0]["nodes"]
    assert sorted((n["tool"], n["params"].get("timezone") or n["params"].get("city")) for n in nodes) == [
        ("get_time", "东京"), ("get_time", "纽约"), ("get_weather", "东京"), ("get_weather", "纽约")]
    answer = of(evts, "done")[0]["answer"]
    assert answer.count("东京") >= 2 and answer.count("纽约") >= 2 and "Current" not in answer


@pytest.mark.slow
def test_with_the_network_unreachable_failures_are_summarised_once(tmp_path: Path, refused_url: str) -> None:
    done = saber("ask", "北京和上海的天气", "--json", home=tmp_path, geo=f"{refused_url}/v1/search", forecast=f"{refused_url}/v1/forecast")
    answer = of(events(done), "done")[0]["answer"]
    assert answer.count("天气服务暂时无法访问") == 1 and "北京" in answer and "上海" in answer
    assert answer.count(NOTE_ZH) == 1 and "Errno" not in answer


@pytest.mark.slow
def test_with_the_network_unreachable_a_place_outside_the_table_is_an_error_not_the_default(tmp_path: Path, refused_url: str) -> None:
    done = saber("ask", "what time is it in Chiang Mai", "--json", home=tmp_path, geo=f"{refused_url}/v1/search",
                 forecast=f"{refused_url}/v1/forecast")
    answer = of(events(done), "done")[0]["answer"]
    assert "Chiang Mai" in answer and "could not be reached" in answer and "Asia/Shanghai" not in answer
    offline = of(events(saber("ask", "东京现在几点", "--json", home=tmp_path, geo=f"{refused_url}/v1/search",
                              forecast=f"{refused_url}/v1/forecast")), "done")[0]["answer"]
    assert offline.startswith("东京现在是") and "Asia/Tokyo" in offline


@pytest.mark.slow
def test_a_time_question_beside_a_report_request_is_answered_and_handed_to_the_report(kb_home: Path,
                                                                                       geo: FakeOpenMeteo) -> None:
    evts = events(saber("ask", "东京现在几点，然后写一份关于员工年假制度的报告", "--json", home=kb_home,
                        geo=geo.geocoding_url, forecast=geo.forecast_url))
    plan = [(n.get("agent") or n.get("tool"), n.get("params")) for n in of(evts, "plan")[0]["nodes"]]
    assert ("get_time", {"timezone": "东京"}) in plan and plan[0][0] == "research_agent"
    answer = of(evts, "done")[0]["answer"]
    assert answer.startswith("东京现在是") and "# 员工年假制度 调研报告" in answer  # the topic, not "东京现在几点"
    assert "### get_time" in answer and "Asia/Tokyo" in answer and "年假" in answer


@pytest.mark.slow
def test_a_rule_mode_report_has_a_clean_topic_no_json_and_one_note(kb_home: Path, geo: FakeOpenMeteo) -> None:
    evts = events(saber("ask", "调研一下员工年假制度并写成报告", "--json", home=kb_home, geo=geo.geocoding_url,
                        forecast=geo.forecast_url))
    answer = of(evts, "done")[0]["answer"]
    assert "# 员工年假制度 调研报告" in answer and "并写成" not in answer
    assert '"findings"' not in answer and "{" not in answer
    assert answer.count(NOTE_ZH) == 1 and "年假" in answer and "tulip" not in answer


@pytest.mark.slow
def test_a_report_on_a_topic_the_knowledge_base_lacks_pastes_nothing_unrelated(kb_home: Path, geo: FakeOpenMeteo) -> None:
    evts = events(saber("ask", "Research the Rust programming language and write a report", "--json", home=kb_home,
                        geo=geo.geocoding_url, forecast=geo.forecast_url))
    answer = of(evts, "done")[0]["answer"]
    assert "tulip" not in answer and "年假" not in answer and "Everest" not in answer
    assert "the Rust programming language and" not in answer
    assert answer.count(NOTE_EN) == 1
