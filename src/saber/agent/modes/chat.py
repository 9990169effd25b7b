"""chat: the model answers with the user's history and memories as context."""

from __future__ import annotations

from saber.agent.context import Turn
from saber.agent.generate import stream_answer
from saber.agent.prompts import CHAT


async def run_chat(turn: Turn) -> str:
    if turn.has_model:  # a model that fails has no rule answer to fall back on: only the failure is said
        return await stream_answer(turn, turn.messages(CHAT, turn.query), fallback="", where="chat")
    fallback = (
        "没有配置语言模型，无法进行自由对话。我仍可以查询时间、天气、网页搜索和你的知识库。"
        if turn.lang == "zh"
        else "Free conversation needs a language model, and none is configured. I can still look up the time, "
        "the weather, the web and your knowledge base."
    )
    return await stream_answer(turn, turn.messages(CHAT, turn.query), fallback=fallback, where="chat", label=False)
