"""The planner prompt the agent sends for a typical query: within budget, cards for what it may need."""

from __future__ import annotations

import json
from collections.abc import Callable

from saber.agent import Agent
from saber.events import Plan
from saber.llm.tokens import estimate_tokens
from saber.testing import ScriptedModel

PLAN = json.dumps([{"id": "n1", "tool": "get_time", "params": {"timezone": "Asia/Shanghai"}},
                   {"id": "n2", "tool": "get_weather", "params": {"city": "北京"}}], ensure_ascii=False)


async def test_the_agents_planner_prompt_lists_only_what_the_query_may_need(make_agent: Callable[..., Agent]) -> None:
    model = ScriptedModel([PLAN, "北京现在……"])
    agent = make_agent(model)
    assert {"read_file", "write_document", "list_documents"} <= set(agent.registry.snapshot())
    answer = await agent.ask("北京天气和时间", user_id="u1", mode="react")
    prompt = model.calls[0].prompt
    assert "任务规划器" in prompt and estimate_tokens(prompt) <= 500
    assert "- get_time(" in prompt and "- get_weather(" in prompt
    assert "read_file" not in prompt and "write_document" not in prompt and "research_agent" not in prompt
    plan = answer.of_type("plan")[0]
    assert isinstance(plan, Plan) and plan.tools is not None and "get_weather" in plan.tools
    assert "read_file" not in plan.tools
