"""Above ``tools_select_above`` tools the planner prompt lists only the most relevant ones (and the
caller's selection); the ``plan`` event names them."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcp_helpers import settings_for

from saber.agent import Agent
from saber.events import Plan
from saber.testing import ScriptedModel
from saber.tools import Tool


def distractor(i: int) -> Tool:
    async def run(args: dict[str, Any]) -> Any:
        return "ok"

    topics = ["invoice", "playlist", "kubernetes pod", "bookmark", "spreadsheet row", "docker container"]
    topic = topics[i % len(topics)]
    schema = {"type": "object", "properties": {"id": {"type": "string"}}}
    return Tool.from_json_schema(f"manage_{topic.replace(' ', '_')}_{i}", f"Manage a {topic} (number {i}).", schema, run,
                                 is_mcp=True)


async def test_the_planner_sees_a_selection_of_many_tools(make_agent: Callable[..., Agent], tmp_path: Path) -> None:
    plan = json.dumps([{"id": "n1", "type": "tool", "tool": "get_time", "params": {"timezone": "Asia/Tokyo"},
                        "depends_on": [], "race_group": None}])
    model = ScriptedModel([plan, "It is noon.", plan, "It is noon."])
    settings = settings_for(tmp_path, [], tools={"select_above": 10, "select_k": 4})
    agent = make_agent([], model, settings=settings, tools=[distractor(i) for i in range(30)])
    answer = await agent.ask("what time is it in Tokyo", mode="react")
    shown = next(e for e in answer.events if isinstance(e, Plan))
    assert shown.tools is not None and len(shown.tools) == 4 and "get_time" in shown.tools
    prompt = model.calls[0].prompt
    assert "get_time" in prompt and sum("manage_" in line for line in prompt.splitlines()) <= 3

    selected = ["get_time", "manage_invoice_0", "manage_playlist_1", "manage_bookmark_3", "manage_docker_container_5",
                "manage_invoice_6", "manage_playlist_7", "manage_bookmark_9", "manage_invoice_12", "manage_invoice_18",
                "manage_invoice_24"]
    answer = await agent.ask("what time is it in Tokyo", mode="react", selected_tools=selected)
    shown = next(e for e in answer.events if isinstance(e, Plan))
    assert shown.tools is not None and set(shown.tools) == set(selected)  # the caller's choice is always listed


async def test_few_tools_are_all_listed_but_the_specialists_the_query_gives_no_cue_for(
        make_agent: Callable[..., Agent], tmp_path: Path) -> None:
    from saber.planner.preselect import SPECIALISTS

    model = ScriptedModel(["[]", "Hello.", "[]", "Hello."])
    agent = make_agent([], model, tools=[distractor(0)])
    answer = await agent.ask("say hello", mode="react")
    listed = next(e for e in answer.events if isinstance(e, Plan)).tools
    everything = set(agent.registry.snapshot())
    assert listed is not None and set(listed) == everything - set(SPECIALISTS) and "manage_invoice_0" in listed
    answer = await agent.ask("say hello", mode="react", selected_tools=sorted(everything - {"list_dir"}))
    listed = next(e for e in answer.events if isinstance(e, Plan)).tools
    assert listed is None and "- read_file(" in model.calls[2].prompt, "the caller's choice is all listed"
