"""Exact matches of rare terms: a passage that holds the id, version, error code or rare name a
query asks for is relevant, whatever its vector similarity says.

Embeddings blur exactly what such a term is about: "LIC-7731" and "LIC-7732" are near neighbours,
and a query of one token scores low against a passage of forty. So the relevance cut
(``saber.agent.relevance``) keeps a passage that contains a query's *rare term* verbatim. A rare
term is either

- an **identifier**: a run of ASCII letters, digits and ``- _ . : /`` shaped like an id, not a
  word: letters with digits (``LIC-7731``, ``orders-v2``, ``E1042``), an underscore
  (``ERR_POOL_EXHAUSTED``), camel case (``PaymentGateway``, ``PostgreSQL``), a dotted version
  (``3.4.1``) or a long number (``20231105001``); a hyphenated or dotted run of letters only
  (``follow-up``, ``asyncio.gather``) when it is rare in the language (below). It matches a
  passage that holds the same identifier whole (case and width aside: ``ｌｉｃ－７７３１``,
  embedded in Chinese with no spaces too), never a longer or different one (``LIC-7732``,
  ``orders-v2-dlq``);
- a **rare word**: a search token of the rest of the query (English words, jieba's Chinese words)
  that is rare in the language, by its frequency in ``wordfreq``'s lists (Zipf below
  ``RARE_ZIPF``: less than about once per million words; so "meeting" or "周会" never qualify),
  and rare in this knowledge base, by BM25's document frequency (in at most one chunk in ten, or
  one chunk). It matches a passage among whose search tokens it is.
"""

from __future__ import annotations

import functools
import importlib.util
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from saber.language import has_han
from saber.lexical.bm25 import STOPWORDS, tokenize

RARE_ZIPF = 3.0
"""Zipf frequency (log10 of occurrences per billion words) below which a word is rare in its
language: "kafka" 2.97, "retries" 1.57, "王敏" 2.6; "gateway" 3.83, "meeting" 4.9, "周会" 3.98."""
CORPUS_SHARE = 0.1
"""A word is rare in the knowledge base when at most this share of its chunks holds it (or one chunk)."""

_IDENTIFIER = re.compile(r"[A-Za-z0-9_]+(?:[-.:/][A-Za-z0-9_]+)*")
_CAMEL = re.compile(r"[a-z][A-Z]|[A-Z]{2}[a-z]")
_VERSION = re.compile(r"\d+(?:\.\d+){2,}")
LONG_NUMBER = 6
SCAN_CHARS = 8192
"""Rare terms are read from the start of a query (as the router reads it): a 100 KB paste costs no more."""
"""Digits alone are an id (an order or ticket number) from this many on; shorter ones are counts and years."""

TermKind = Literal["identifier", "word"]


@dataclass(frozen=True, kw_only=True, slots=True)
class RareTerm:
    """A term of a query whose exact presence makes a passage relevant."""

    text: str
    """As the query wrote it (``LIC-7731``)."""
    key: str
    """What is compared: the identifier case-folded and width-normalised, or the search token."""
    kind: TermKind


def _normalise(text: str) -> str:
    return unicodedata.normalize("NFKC", text)


def identifiers(text: str) -> set[str]:
    """Every maximal identifier-like run in ``text`` (ASCII letters, digits, ``_`` joined by ``- . : /``),
    case-folded, full-width forms read as ASCII."""
    return {m.group(0).casefold() for m in _IDENTIFIER.finditer(_normalise(text))}


@functools.cache
def _wordfreq_reads_chinese() -> bool:
    """wordfreq segments Chinese with jieba (the ``offline`` extra), not with BM25's rjieba."""
    return importlib.util.find_spec("jieba") is not None


def _zipf(word: str) -> float:
    """How common ``word`` is (Zipf scale). wordfreq segments Chinese with jieba: without it (the
    core install) a Chinese token counts as common, so it is never a rare word; ids still are."""
    from wordfreq import zipf_frequency  # its word lists load with the first query that needs them

    if has_han(word) and not _wordfreq_reads_chinese():
        return float("inf")
    return float(zipf_frequency(word, "zh" if has_han(word) else "en"))


def _shaped(run: str) -> bool:
    """Whether an identifier-like run is shaped like an id rather than a word or a number."""
    letters = any(c.isalpha() for c in run)
    digits = any(c.isdigit() for c in run)
    if not letters:
        return _VERSION.fullmatch(run) is not None or (run.isdigit() and len(run) >= LONG_NUMBER)
    if len(run) < 3:
        return False
    if digits or "_" in run.strip("_") or _CAMEL.search(run):
        return True
    return any(c in run for c in "-.:/") and len(run) >= 4 and _zipf(run.lower()) < RARE_ZIPF


def rare_terms(query: str, doc_freq: Callable[[str], int], chunks: int) -> list[RareTerm]:
    """The rare terms of ``query`` (see the module's docstring). ``doc_freq(token)``: how many of the
    knowledge base's ``chunks`` hold a search token (``BM25Index.doc_freq``)."""
    text = _normalise(query[:SCAN_CHARS])
    terms: list[RareTerm] = []
    rest: list[str] = []
    last = 0
    for m in _IDENTIFIER.finditer(text):
        run = m.group(0)
        if _shaped(run):
            terms.append(RareTerm(text=run, key=run.casefold(), kind="identifier"))
            rest.append(text[last:m.start()])
            last = m.end()
    rest.append(text[last:])
    limit = max(1, int(chunks * CORPUS_SHARE))
    for token in dict.fromkeys(tokenize(" ".join(rest))):  # an id's parts ("lic" of LIC-7732) are not words
        if token in STOPWORDS or token.isdigit() or len(token) < (2 if has_han(token) else 3):
            continue
        if 0 < doc_freq(token) <= limit and _zipf(token) < RARE_ZIPF:
            terms.append(RareTerm(text=token, key=token, kind="word"))
    return terms


def exact_match(terms: Sequence[RareTerm], text: str) -> RareTerm | None:
    """The first of ``terms`` that ``text`` (a passage, with its title) holds exactly, if any."""
    if not terms:
        return None
    ids = identifiers(text) if any(t.kind == "identifier" for t in terms) else set()
    words = set(tokenize(text)) if any(t.kind == "word" for t in terms) else set()
    return next((t for t in terms if t.key in (ids if t.kind == "identifier" else words)), None)
