"""ToolIndex: ranking tools for a query, the router's match for MCP tools, the planner prompt's selection."""

from __future__ import annotations

from typing import Any

from saber.agent.router import route
from saber.mcp.arguments import rule_arguments
from saber.rag.embedder import HashingEmbedder
from saber.tools import Tool
from saber.tools.index import ToolIndex, select_prompt_tools


def make(name: str, description: str, params: dict[str, str] | None = None, *, mcp: bool = True,
         required: list[str] | None = None) -> Tool:
    async def run(args: dict[str, Any]) -> Any:
        return args

    schema = {"type": "object", "properties": {p: {"type": t} for p, t in (params or {}).items()}, "required": required or []}
    return Tool.from_json_schema(name, description, schema, run, is_mcp=mcp)


TOOLS = {t.name: t for t in [
    make("get_time", "Current time in a timezone.", {"timezone": "string"}, mcp=False),
    make("get_current_time", "Get current time in a specific timezone", {"timezone": "string"}, required=["timezone"]),
    make("convert_time", "Convert time between timezones", {"source_timezone": "string", "time": "string", "target_timezone": "string"},
         required=["source_timezone", "time", "target_timezone"]),
    make("create_issue", "Create a new issue in a GitHub repository", {"owner": "string", "repo": "string", "title": "string"}),
    make("send_email", "Send an email message to recipients", {"to": "string", "subject": "string", "body": "string"}),
    make("read_file", "Read the complete contents of a file from the file system", {"path": "string"}),
    make("get-sum", "Returns the sum of two numbers", {"a": "number", "b": "number"}),
]}


def index(tools: dict[str, Tool] = TOOLS) -> ToolIndex:
    built = ToolIndex(HashingEmbedder(), background=False)
    built.update(tools)
    return built


def test_search_ranks_by_name_description_and_parameters() -> None:
    idx = index()
    assert idx.search("open an issue in the saber repo", 1) == ["create_issue"]
    assert idx.search("email the report to my boss", 1) == ["send_email"]
    assert idx.search("what is the sum of 3 and 4", 1) == ["get-sum"]
    assert idx.search("subject and body", 1) == ["send_email"]  # parameter names count
    assert idx.search("把 /etc/hosts 文件读一下 file", 1) == ["read_file"]


def test_best_match_is_an_mcp_tool_the_query_is_clearly_about() -> None:
    idx = index()
    assert idx.best_match("现在东京几点") == "get_current_time"  # the keyword table bridges 几点 → time
    assert idx.best_match("please create an issue titled crash") == "create_issue"
    assert idx.best_match("你好") is None
    assert idx.best_match("tell me a joke") is None
    assert idx.best_match("current time", among=["get_time"]) is None  # built-ins are the keyword table's


def test_the_index_follows_tools_coming_and_going() -> None:
    idx = index()
    fewer = {n: t for n, t in TOOLS.items() if n != "create_issue"}
    idx.update(fewer)
    assert idx.best_match("please create an issue titled crash") is None
    idx.update(TOOLS)
    assert idx.best_match("please create an issue titled crash") == "create_issue"


def test_the_router_asks_the_index_when_no_built_in_fits() -> None:
    idx = index()
    names = [n for n in TOOLS if n != "get_time"]
    decision = route("现在东京几点", tools=names, knowledge_loaded=False, matcher=idx.best_match)
    assert (decision.mode, decision.rule, decision.tools) == ("tool", "tool-index:get_current_time", ["get_current_time"])
    with_builtin = route("现在东京几点", tools=list(TOOLS), knowledge_loaded=False, matcher=idx.best_match)
    assert with_builtin.rule == "keywords:tool(time)" and with_builtin.tools == ["get_time"]
    chat = route("你好", tools=names, knowledge_loaded=False, matcher=idx.best_match)
    assert chat.mode == "chat"


def test_planner_prompt_selection_keeps_the_selected_tools() -> None:
    idx = index()
    shown, chosen = select_prompt_tools("email the report", TOOLS, idx, above=100, k=3)
    assert chosen is None and shown == TOOLS
    shown, chosen = select_prompt_tools("email the report", TOOLS, idx, above=3, k=3, keep=["get-sum"])
    assert chosen is not None and len(chosen) == 3 and {"send_email", "get-sum"} <= set(chosen)
    assert list(shown) == chosen == [n for n in TOOLS if n in chosen]  # registry order


def test_an_index_without_an_embedder_ranks_by_words() -> None:
    idx = ToolIndex()
    idx.update(TOOLS)
    assert idx.search("read the file", 1) == ["read_file"]


def test_rule_arguments_for_an_unknown_tool() -> None:
    current, convert = TOOLS["get_current_time"], TOOLS["convert_time"]
    assert rule_arguments("现在东京几点", current) == {"timezone": "Asia/Tokyo"}
    assert rule_arguments("what time is it in new york", current) == {"timezone": "America/New_York"}
    assert rule_arguments("几点了", current, {"city": "上海"}) == {"timezone": "Asia/Shanghai"}
    assert rule_arguments("几点了", current, default_timezone="Europe/Berlin") == {"timezone": "Europe/Berlin"}
    assert rule_arguments("几点了", current) is None
    assert rule_arguments("东京 9 点是伦敦几点", convert) is None  # time is required and not a rule's to guess


class CountingEmbedder(HashingEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.documents = 0

    def embed_documents(self, texts: Any) -> Any:
        self.documents += len(texts)
        return super().embed_documents(texts)


async def test_tool_cards_are_embedded_only_once_a_selection_among_many_tools_needs_them() -> None:
    embedder = CountingEmbedder()
    built = ToolIndex(embedder, background=False)
    await built.refresh(TOOLS, "what time is it", TOOLS, above=len(TOOLS))
    assert embedder.documents == 0, "no selection: routing ranks by words and the model is not loaded"
    assert built.rankings("current time")[0], "words still rank"
    await built.refresh(TOOLS, "what time is it", TOOLS, above=3)
    assert embedder.documents == len(TOOLS)
    await built.refresh(TOOLS, "and now?", TOOLS, above=3)
    assert embedder.documents == len(TOOLS), "cards already embedded are not embedded again"


async def test_a_refresh_with_the_registry_unchanged_makes_no_worker_thread_call(monkeypatch: Any) -> None:
    import asyncio

    builtin = {n: t for n, t in TOOLS.items() if not t.is_mcp}
    built = ToolIndex(HashingEmbedder(), background=False)
    calls: list[object] = []
    to_thread = asyncio.to_thread

    async def counted(fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        calls.append(fn)
        return await to_thread(fn, *args, **kwargs)

    monkeypatch.setattr(asyncio, "to_thread", counted)
    await built.refresh(builtin, "what time is it", builtin, above=len(builtin))
    assert len(calls) == 1, "the first refresh indexes the registry"
    await built.refresh(dict(builtin), "and now?", builtin, above=len(builtin))
    assert len(calls) == 1, "the same tools again: nothing to index, no thread"
    added = {**builtin, "send_email": make("send_email", "Send an email message to recipients", {"to": "string"},
                                           mcp=False)}
    await built.refresh(added, "email bob", added, above=len(added))
    assert len(calls) == 2 and built.rankings("send an email")[0][0][0] == "send_email", "a new tool is indexed at once"
    changed = {**added, "send_email": make("send_email", "Send a fax", {"to": "string"}, mcp=False)}
    await built.refresh(changed, "fax bob", changed, above=len(changed))
    assert len(calls) == 3, "a tool registered again under its name is indexed again"
    await built.refresh(TOOLS, "what time is it", TOOLS, above=len(TOOLS))
    await built.refresh(TOOLS, "what time is it", TOOLS, above=len(TOOLS))
    assert len(calls) == 5, "with MCP tools the query is tokenized in a thread (jieba's first use is slow)"
