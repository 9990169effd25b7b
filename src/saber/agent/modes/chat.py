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
    if turn.uncalled_tools:  # the request asked for a tool whose arguments only a model could make from it
        names = ", ".join(turn.uncalled_tools)
        fallback = (
            f"无法调用 {names}：它需要的参数只能由语言模型从你的请求中得出，而当前没有配置语言模型。"
            if turn.lang == "zh"
            else f"{names} could not be called: its arguments can only be made from your request by a language "
            "model, and none is configured."
        )
    return await stream_answer(turn, turn.messages(CHAT, turn.query), fallback=fallback, where="chat", label=False)
