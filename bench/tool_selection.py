"""Choosing tools among many: recall@k of the tools a query needs, and planner prompt size.

    python bench/tool_selection.py [--k 3 5 10] [--embedder local|e5|hashing|none]

Over the built-ins (get_time, get_weather, search_web, rag_search, write_document), the tools
of two real MCP servers (mcp-server-time and server-everything, their tools/list recorded in
bench/tool_selection_data.py) and 96 generated distractors, 55 labelled queries (Chinese and
English, 61 needs). Side by side in one run: the first k tools in registry order (what a prompt
cut to k tools without an index would list), BM25 over jieba tokens alone, the embedder alone,
and the two fused (what Saber uses). Then the planner prompt with every tool against the prompt
with the top-k chosen by the index: characters and estimated tokens (a CJK character is one
token, otherwise four characters are one; no tokenizer is assumed).
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any, cast

sys.path.insert(0, str(Path(__file__).resolve().parent))

from saber.config import Settings
from saber.planner import build_planner_prompt
from saber.rag.tools import knowledge_tools
from saber.tools import Tool
from saber.tools.builtin import builtin_tools
from saber.tools.index import ToolIndex
from tool_selection_data import DISTRACTORS, MCP_TOOLS, QUERIES


async def _never(args: dict[str, Any]) -> Any:
    raise RuntimeError("benchmark tools are not run")


def _tool(name: str, description: str, params: dict[str, str], required: list[str], mcp: bool) -> Tool:
    schema = {"type": "object", "properties": {p: {"type": "string", "description": d} for p, d in params.items()},
              "required": required}
    return Tool.from_json_schema(name, description, schema, _never, is_mcp=mcp)


def all_tools() -> dict[str, Tool]:
    tools: dict[str, Tool] = {t.name: t for t in builtin_tools(Settings(search={"backend": "none"}))}
    tools.update({t.name: t for t in knowledge_tools(cast(Any, None))})
    for spec in [*MCP_TOOLS, *DISTRACTORS]:
        tools[spec[0]] = _tool(*spec, mcp=True)
    return tools


def estimate_tokens(text: str) -> int:
    cjk = len(re.findall(r"[\u3400-\u9fff\uf900-\ufaff]", text))
    return cjk + (len(text) - cjk + 3) // 4


def recall(ranked: dict[str, list[str]], k: int) -> float:
    covered = total = 0
    for query, needs in QUERIES:
        top = set(ranked[query][:k])
        for alternatives in needs:
            total += 1
            covered += bool(top & set(alternatives))
    return covered / total


def embedder_for(kind: str) -> Any:
    if kind == "none":
        return None
    if kind == "hashing":
        from saber.rag.embedder import HashingEmbedder

        return HashingEmbedder()
    from saber.rag.embedder import LOCAL_EMBEDDERS

    return LOCAL_EMBEDDERS["multilingual-e5-small" if kind == "e5" else "use-multilingual-v3"]()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--k", type=int, nargs="+", default=[3, 5, 10])
    parser.add_argument("--prompt-k", type=int, default=12, help="tools in the planner prompt with selection")
    parser.add_argument("--embedder", choices=["local", "e5", "hashing", "none"], default="local",
                        help="local: the default bundled model (USE multilingual v3); e5: multilingual-e5-small")
    args = parser.parse_args()

    tools = all_tools()
    names = list(tools)
    needs = sum(len(n) for _, n in QUERIES)
    print(f"{len(tools)} tools ({len(MCP_TOOLS)} from MCP servers, {len(DISTRACTORS)} generated distractors), "
          f"{len(QUERIES)} labelled queries, {needs} needs; embedder: {args.embedder}")

    index = ToolIndex(embedder_for(args.embedder), background=False)
    began = time.perf_counter()
    index.update(tools)
    print(f"indexing: {time.perf_counter() - began:.2f} s")
    began = time.perf_counter()
    for query, _ in QUERIES:
        index.embed_query_now(query)
    per_query_embed = (time.perf_counter() - began) / len(QUERIES)

    systems: dict[str, dict[str, list[str]]] = {"registry order": {}, "bm25": {}, "embedding": {}, "fused (saber)": {}}
    search_ms: list[float] = []
    for query, _ in QUERIES:
        lexical, semantic = index.rankings(query)
        systems["registry order"][query] = names
        systems["bm25"][query] = [n for n, _ in lexical]
        systems["embedding"][query] = [n for n, _ in semantic]
        began = time.perf_counter()
        systems["fused (saber)"][query] = index.search(query, len(names))
        search_ms.append((time.perf_counter() - began) * 1000)

    header = "recall@k".ljust(18) + "".join(f"k={k}".rjust(9) for k in args.k)
    print("\n" + header)
    for label, ranked in systems.items():
        if label == "embedding" and index.embedder is None:
            continue
        print(label.ljust(18) + "".join(f"{recall(ranked, k):9.3f}" for k in args.k))
    print(f"\nsearch (fused, query vector ready): p50 {statistics.median(search_ms):.2f} ms; "
          f"query embedding: {per_query_embed * 1000:.0f} ms per query")

    full_chars, chosen_chars, full_tokens, chosen_tokens = [], [], [], []
    for query, _ in QUERIES:
        full = build_planner_prompt(query, tools)
        chosen = index.select(query, tools, args.prompt_k)
        small = build_planner_prompt(query, {n: tools[n] for n in chosen})
        for messages, chars, tokens in ((full, full_chars, full_tokens), (small, chosen_chars, chosen_tokens)):
            text = "".join(m.content for m in messages)
            chars.append(len(text))
            tokens.append(estimate_tokens(text))
    k = args.prompt_k
    print(f"\nplanner prompt, mean over the queries   all {len(tools)} tools   top-{k} chosen   ratio")
    print(f"characters                              {statistics.mean(full_chars):14.0f}   {statistics.mean(chosen_chars):12.0f}   "
          f"{statistics.mean(full_chars) / statistics.mean(chosen_chars):5.1f}x")
    print(f"estimated tokens                        {statistics.mean(full_tokens):14.0f}   {statistics.mean(chosen_tokens):12.0f}   "
          f"{statistics.mean(full_tokens) / statistics.mean(chosen_tokens):5.1f}x")
    print(f"recall of the needed tools in the top-{k}: {recall(systems['fused (saber)'], k):.3f}")


if __name__ == "__main__":
    main()
