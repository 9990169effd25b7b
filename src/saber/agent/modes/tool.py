"""tool: a rule picks one tool and its arguments; it runs; the model writes the answer (one call)."""

from __future__ import annotations

from saber.agent.context import Turn
from saber.agent.generate import stream_answer, with_failed_steps
from saber.agent.grounded_call import ground_tool_call
from saber.agent.modes.chat import run_chat
from saber.agent.modes.tool_args import corrected_arguments
from saber.agent.observations import as_text
from saber.agent.prompts import TOOL_ANSWER
from saber.agent.render import ask_for_city, render_nodes
from saber.events import Event, EventHandler, GraphReady, NodeDone, NodeStart, Step, Token, ToolCallEvent
from saber.graph.node import Node, NodeStatus
from saber.graph.runtime import GraphRuntime

_RUNTIME_BOOKKEEPING = (GraphReady, NodeStart, NodeDone, Step)
"""The runtime's own events: tool mode reports its one call as ``tool_call`` instead."""


def _tool_events(turn: Turn) -> EventHandler:
    """What the tool emits (``rag_result``...) and the runtime's errors reach the stream."""

    async def handle(event: Event) -> None:
        if not isinstance(event, _RUNTIME_BOOKKEEPING):
            await turn.emit(event)

    return handle


async def run_tool(turn: Turn, node: Node) -> str:
    """Execute ``node`` (with the runtime's retries and timeout) and answer from its result. A call
    the model chose is first grounded in the request (``grounded_call``)."""
    note = ""
    if turn.tool_node_by_model:
        grounded = await ground_tool_call(turn, node, lambda wrong, why: corrected_arguments(turn, wrong, why))
        note = grounded.note
        if grounded.node is None:
            return await _with_note(turn, await run_chat(turn), note)
        node = grounded.node
    runtime = GraphRuntime([node], turn.tools, turn.services.graph_config(max_replan=0), _tool_events(turn),
                           task_id=turn.task_id)
    run = await runtime.run()
    done = run.nodes[node.id]
    ok = done.status is NodeStatus.DONE
    await turn.emit(ToolCallEvent(tool_name=node.tool or "", params=done.params, tool_result=done.result if ok else None,
                                  error=None if ok else done.error, duration_ms=done.duration_ms))
    result_text = as_text(done.result) if ok else f"ERROR: {done.error}"
    if turn.lang == "zh":
        prompt = f"用户问：{turn.query}\n工具 {node.tool} 返回结果：{result_text}\n请根据结果自然地回答用户。"
    else:
        prompt = f"The user asked: {turn.query}\nTool {node.tool} returned: {result_text}\nAnswer the user from this result."
    fallback = render_nodes([done], turn.lang, query=turn.query, preferences=turn.preferences,
                            default_timezone=turn.services.settings.tools.default_timezone)
    answer = await stream_answer(turn, turn.messages(TOOL_ANSWER, prompt, with_history=False), fallback=fallback,
                                 where="tool")
    return await _with_note(turn, await with_failed_steps(turn, answer, [done]), note)


async def _with_note(turn: Turn, answer: str, note: str) -> str:
    """``answer`` and, when there is one, ``note`` as its last paragraph (streamed as a token)."""
    if not note:
        return answer
    await turn.emit(Token(content=f"\n\n{note}"))
    return f"{answer}\n\n{note}"


async def ask_for_arguments(turn: Turn, tools: list[str]) -> str:
    """Tool mode without the arguments it needs (the weather of no named place, none preferred): ask."""
    text = ask_for_city(turn.lang) if "get_weather" in tools else (
        "请补充这个请求需要的信息。" if turn.lang == "zh" else "Please add the details this request needs.")
    await turn.emit(Token(content=text))
    return text
