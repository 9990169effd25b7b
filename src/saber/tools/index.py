"""``ToolIndex``: find the tools a query needs among many, by name, description and parameter names.

With MCP servers a registry holds tools nobody at Saber knew about. The index ranks them for a
query with BM25 over search tokens (jieba for Chinese) fused with embedding similarity (when an
embedder is given) by reciprocal rank fusion. The router asks ``best_match`` when no built-in
keyword fits; the planner prompt lists only ``select``'s top-k when there are many tools.

Tool cards are embedded in a background thread as tools come and go, so an update never blocks
the event loop; until the vectors are there the index ranks by BM25 alone. A query's vector is
made by ``await prepare(query)`` (in a thread) before the sync calls that use it.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Collection, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

from saber.tools.base import Tool

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

log = logging.getLogger(__name__)

Vector: TypeAlias = "npt.NDArray[np.float32]"


class _Embedder(Protocol):
    def embed_documents(self, texts: list[str]) -> Any: ...
    def embed_query(self, text: str) -> Any: ...


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
EMBED_MARGIN = 0.02
"""An embedding-only match must beat the runner-up's cosine by this much to be trusted."""


def tool_card(tool: Tool) -> str:
    """What the index reads of a tool: its name as words, its description and its parameters."""
    words = _CAMEL.sub(" ", tool.name).replace("_", " ").replace("-", " ").replace(".", " ")
    params = " ".join(_CAMEL.sub(" ", p.name).replace("_", " ") for p in tool.parameters)
    return f"{words}: {tool.description.strip()} [{params}]"


def _need_words(query: str) -> list[str]:
    """English names of what the keyword table recognises ("几点" → time): the bridge from a
    Chinese query to an English tool description."""
    from saber.lexical import keywords as kw

    table = (("time current now", kw.TIME), ("weather forecast", kw.WEATHER), ("search web", kw.SEARCH))
    return [word for words, pattern in table if pattern.search(query) for word in words.split()]


class ToolIndex:
    def __init__(self, embedder: _Embedder | None = None, *, background: bool = True) -> None:
        self.embedder = embedder
        self.background = background
        """Embed tool cards in a thread (False: at once, in ``update``; benchmarks and tests)."""
        self._lock = threading.Lock()
        self._cards: dict[str, str] = {}
        self._indexed: dict[str, Tool] = {}
        """The registry snapshot indexed last (tools are frozen: the same objects, the same cards)."""
        self._mcp: set[str] = set()
        self._bm25: Any = None
        self._names: list[str] = []
        self._vectors: dict[str, Vector] = {}
        """card digest → unit vector."""
        self._queries: OrderedDict[str, Vector] = OrderedDict()
        self._worker: threading.Thread | None = None

    # -- keeping up with the registry -----------------------------------------------------------

    def update(self, tools: Mapping[str, Tool], *, embed: bool = True) -> None:
        """Index exactly ``tools`` (a registry snapshot); cheap when nothing changed. ``embed``:
        also embed their cards (in a thread), which only a selection among many tools needs."""
        from saber.lexical.bm25 import BM25Index, tokenize

        cards = {name: tool_card(t) for name, t in tools.items()}
        with self._lock:
            self._indexed = dict(tools)
            if cards != self._cards:
                self._cards = cards
                self._mcp = {name for name, t in tools.items() if t.is_mcp}
                self._names = list(cards)
                self._bm25 = BM25Index(range(len(self._names)), [tokenize(c) for c in cards.values()])
        if embed:
            self._embed_missing()

    def _embed_missing(self) -> None:
        if self.embedder is None:
            return
        if not self.background:
            self._embed_work()
            return
        with self._lock:
            if self._worker is not None and self._worker.is_alive():
                return
            if all(_digest(card) in self._vectors for card in self._cards.values()):
                return
            self._worker = threading.Thread(target=self._embed_work, name="saber-tool-index", daemon=True)
            self._worker.start()

    def _embed_work(self) -> None:
        import numpy as np

        assert self.embedder is not None
        while True:
            with self._lock:
                todo = {_digest(c): c for c in self._cards.values() if _digest(c) not in self._vectors}
            if not todo:
                return
            try:
                vectors = np.asarray(self.embedder.embed_documents(list(todo.values())), dtype=np.float32)
            except Exception:
                log.exception("embedding tool descriptions failed; the tool index ranks by words only")
                return
            with self._lock:
                for key, vector in zip(todo, vectors, strict=True):
                    self._vectors[key] = vector

    def wait_embedded(self, timeout: float | None = None) -> bool:
        """Block until the background embedding is done (tests, benchmarks)."""
        worker = self._worker
        if worker is not None:
            worker.join(timeout)
        return worker is None or not worker.is_alive()

    async def refresh(self, registry: Mapping[str, Tool], query: str, tools: Mapping[str, Tool], *, above: int) -> None:
        """Before routing ``query``: follow the registry and tokenize the query (jieba's first use
        loads its dictionary) in a thread, then ``prepare_for``; nothing heavy runs on the loop."""
        from saber.lexical.bm25 import tokenize

        embed = len(tools) > above  # the model loads only for a selection
        if not embed and not self._mcp and self._indexes(registry):  # nothing to do: no worker thread
            return

        def work() -> None:
            self.update(registry, embed=embed)
            if self._mcp:
                tokenize(query)

        await asyncio.to_thread(work)
        await self.prepare_for(query, tools, above=above)

    def _indexes(self, tools: Mapping[str, Tool]) -> bool:
        """``tools`` are the very tools indexed last: ``update`` would find nothing changed."""
        indexed = self._indexed
        return len(indexed) == len(tools) and all(indexed.get(name) is tool for name, tool in tools.items())

    async def prepare_for(self, query: str, tools: Mapping[str, Tool], *, above: int) -> None:
        """``prepare`` when the planner prompt will list a selection (more than ``above`` tools).

        A query's embedding costs a model call on the CPU (tens of ms idle, a second or more on a
        loaded machine), so it is made only then; with fewer tools routing ranks by words alone
        and the planner sees every tool anyway."""
        if len(tools) > above:
            await self.prepare(query)

    async def prepare(self, query: str) -> None:
        """Embed ``query`` in a thread, for the sync searches that follow (no-op without an embedder)."""
        import numpy as np

        if self.embedder is None or query in self._queries or not self._vectors:
            return
        embedder = self.embedder
        vector = await asyncio.to_thread(lambda: np.asarray(embedder.embed_query(query), dtype=np.float32))
        with self._lock:
            self._queries[query] = vector
            while len(self._queries) > 64:
                self._queries.popitem(last=False)

    def embed_query_now(self, query: str) -> None:
        """``prepare`` without a loop (benchmarks)."""
        import numpy as np

        if self.embedder is not None:
            self._queries[query] = np.asarray(self.embedder.embed_query(query), dtype=np.float32)

    # -- searching ------------------------------------------------------------------------------

    def rankings(self, query: str, among: Collection[str] | None = None) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
        """(BM25 ranking, embedding ranking) of the indexed tools in ``among`` (all when None)."""
        from saber.lexical.bm25 import tokenize

        with self._lock:
            names, bm25, cards = list(self._names), self._bm25, dict(self._cards)
            qvec = self._queries.get(query)
            vectors = {n: self._vectors.get(_digest(cards[n])) for n in names}
        allowed = set(names) if among is None else set(among) & set(names)
        lexical: list[tuple[str, float]] = []
        if bm25 is not None:
            tokens = tokenize(query) + _need_words(query)
            lexical = [(names[i], s) for i, s in bm25.search(tokens, len(names)) if names[i] in allowed and s > 0]
        semantic: list[tuple[str, float]] = []
        if qvec is not None:
            scored = [(n, float(v @ qvec)) for n, v in vectors.items() if v is not None and n in allowed]
            semantic = sorted(scored, key=lambda x: -x[1])
        return lexical, semantic

    def search(self, query: str, k: int, among: Collection[str] | None = None) -> list[str]:
        """The ``k`` best tools for ``query``, best first (BM25 and embeddings fused by RRF)."""
        from saber.lexical.fusion import reciprocal_rank_fusion

        lexical, semantic = self.rankings(query, among)
        fused = reciprocal_rank_fusion([[n for n, _ in lexical], [n for n, _ in semantic]])
        return [n for n, _ in fused[:k]]

    def best_match(self, query: str, among: Collection[str] | None = None) -> str | None:
        """The MCP tool ``query`` is clearly about, or None.

        Only tools that came from MCP servers compete (the keyword table already covers the
        built-ins). Clear means: the best by words and the best fused; or, without shared words,
        an embedding similarity ahead of the runner-up by ``EMBED_MARGIN``.
        """
        candidates = [n for n in (among if among is not None else self._names) if n in self._mcp]
        if not candidates:
            return None
        lexical, semantic = self.rankings(query, candidates)
        fused = self.search(query, 1, candidates)
        if lexical and fused and lexical[0][0] == fused[0]:
            return fused[0]
        if not lexical and len(semantic) >= 1:
            runner_up = semantic[1][1] if len(semantic) > 1 else -1.0
            if semantic[0][1] - runner_up >= EMBED_MARGIN:
                return semantic[0][0]
        return None

    def select(self, query: str, tools: Mapping[str, Tool], k: int, *, keep: Iterable[str] = ()) -> list[str]:
        """Names of the ``k`` tools of ``tools`` most relevant to ``query``, plus ``keep`` (in
        registry order); tools nothing ranks are filled in by registry order up to ``k``."""
        chosen = list(dict.fromkeys(n for n in keep if n in tools))
        for name in [*self.search(query, len(tools), list(tools)), *tools]:
            if len(chosen) >= k:
                break
            if name not in chosen:
                chosen.append(name)
        wanted = set(chosen)
        return [n for n in tools if n in wanted]


def select_prompt_tools(query: str, tools: Mapping[str, Tool], index: ToolIndex | None, *, above: int, k: int,
                        keep: Iterable[str] = ()) -> tuple[dict[str, Tool], list[str] | None]:
    """The tools for the planner prompt: all of them up to ``above``, else ``index.select``'s.
    Returns (tools, the chosen names or None when no selection was made)."""
    if index is None or len(tools) <= above:
        return dict(tools), None
    names = index.select(query, tools, k, keep=keep)
    return {n: tools[n] for n in names}, names


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=12).hexdigest()
