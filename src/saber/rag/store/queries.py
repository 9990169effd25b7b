"""The knowledge stores' statements in SQLAlchemy Core, compiled by ``python -m saber.db.compile``
into ``queries_sql.py``, which ``SqlStore`` and its SQLite and PostgreSQL backends run (see
``saber.db.statements``).

Documents are read with their chunk counts, or with zeros before the store has its chunk table
(``*_BARE``: the table is made when the store learns its embedder). Left as SQL text in the
backends: the chunk table's DDL (its pgvector column is sized for the embedder at run time),
PostgreSQL's ``SET LOCAL hnsw.ef_search`` and its binary ``COPY`` of new chunks."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql as pg

from saber.db.statements import PerDialect
from saber.db.tables import rag_chunk_removals as removals
from saber.db.tables import rag_chunks as chunks
from saber.db.tables import rag_document_versions as versions
from saber.db.tables import rag_documents as documents
from saber.db.tables import rag_embed_claims as claims
from saber.db.tables import rag_meta as meta
from saber.db.tables import rag_owners as owners
from saber.db.tables import rag_sections as sections
from saber.db.tables import with_each_insert

_p = sa.bindparam

# -- the counters in rag_meta --------------------------------------------------------------------

META = sa.select(meta.c.value).where(meta.c.key == _p("key"))

BUMP = sa.update(meta).where(meta.c.key == _p("key")).values(
    value=sa.cast(sa.cast(meta.c.value, sa.Integer) + 1, sa.Text))
"""A counter, one up (first thing in a write: on PostgreSQL its row lock orders writers)."""

REVISIONS = sa.select(meta.c.value).where(meta.c.key.in_(["revision", "vectors"])).order_by(meta.c.key)
"""The write and vector-fill counters: together they change with anything a search sees."""

FORGET_META = sa.delete(meta).where(meta.c.key == _p("key"))
SET_META = sa.insert(meta).values(key=_p("key"), value=_p("value"))
SET_REMOVALS_FLOOR = sa.update(meta).where(meta.c.key == "removals_floor").values(value=_p("value"))
FORGET_FILL_FAILURE = sa.delete(meta).where(meta.c.key == "fill_failure")


def _record_fill_failure(insert: Any) -> Any:
    statement = insert(meta).values(key="fill_failure", value=_p("value"))
    return statement.on_conflict_do_update(index_elements=[meta.c.key], set_={"value": statement.excluded.value})


RECORD_FILL_FAILURE = with_each_insert(_record_fill_failure)

# -- documents -----------------------------------------------------------------------------------

_DOCUMENT = (documents.c.id, documents.c.title, documents.c.source, documents.c.doc_type, documents.c.content_hash,
             documents.c.version, documents.c.created_at, documents.c.updated_at, documents.c.summary,
             documents.c.indexed)


def _count(*where: sa.ColumnElement[bool]) -> sa.ScalarSelect[Any]:
    return sa.select(sa.func.count()).select_from(chunks).where(chunks.c.document_id == documents.c.id,
                                                                 *where).scalar_subquery()


_COUNTS = (_count(), _count(chunks.c.embedding.is_not(None)))
_NO_COUNTS: tuple[Any, ...] = (sa.literal_column("0"), sa.literal_column("0"))


def _documents(*, counts: bool, content: bool = False) -> sa.Select[Any]:
    """Rows for ``sql._document``: the columns, the chunk and embedded-chunk counts, the content."""
    return sa.select(*_DOCUMENT, *(_COUNTS if counts else _NO_COUNTS), *((documents.c.content,) if content else ()))


DOCUMENT_BY_HASH = _documents(counts=True).where(documents.c.content_hash == _p("value"))
DOCUMENT_BY_HASH_BARE = _documents(counts=False).where(documents.c.content_hash == _p("value"))
DOCUMENT_BY_KEY = _documents(counts=True).where(documents.c.doc_key == _p("value"))
DOCUMENT_BY_KEY_BARE = _documents(counts=False).where(documents.c.doc_key == _p("value"))
DOCUMENT_BY_ID = _documents(counts=True).where(documents.c.id == _p("value"))
DOCUMENT_BY_ID_BARE = _documents(counts=False).where(documents.c.id == _p("value"))
DOCUMENT_WITH_CONTENT = _documents(counts=True, content=True).where(documents.c.id == _p("value"))
DOCUMENT_WITH_CONTENT_BARE = _documents(counts=False, content=True).where(documents.c.id == _p("value"))
DOCUMENTS = _documents(counts=True).order_by(documents.c.updated_at.desc(), documents.c.title)
DOCUMENTS_BARE = _documents(counts=False).order_by(documents.c.updated_at.desc(), documents.c.title)

INSERT_DOCUMENT = sa.insert(documents).values(
    id=_p("id"), doc_key=_p("doc_key"), title=_p("title"), source=_p("source"), doc_type=_p("doc_type"),
    summary=_p("summary"), content_hash=_p("content_hash"), content=_p("content"), version=1, indexed=0,
    created_at=_p("now"), updated_at=_p("now"))

KEEP_VERSION = sa.insert(versions).from_select(
    ["document_id", "version", "title", "content_hash", "content", "created_at"],
    sa.select(documents.c.id, documents.c.version, documents.c.title, documents.c.content_hash, documents.c.content,
              documents.c.updated_at).where(documents.c.id == _p("id")))
"""The document as it is now, kept as a past version (before a new version replaces it)."""

NEW_VERSION = sa.update(documents).where(documents.c.id == _p("id")).values(
    title=_p("title"), doc_type=_p("doc_type"), summary=_p("summary"), content_hash=_p("content_hash"),
    content=_p("content"), version=documents.c.version + 1, indexed=0, updated_at=_p("now"))

SET_INDEXED = sa.update(documents).where(documents.c.id == _p("id")).values(indexed=_p("indexed"))
FORGET_VERSIONS = sa.delete(versions).where(versions.c.document_id == _p("id"))
FORGET_DOCUMENT = sa.delete(documents).where(documents.c.id == _p("id"))

# -- sections and chunks -------------------------------------------------------------------------

INSERT_SECTION = sa.insert(sections).values(document_id=_p("document_id"), ordinal=_p("ordinal"), text=_p("text"))
FORGET_SECTIONS = sa.delete(sections).where(sections.c.document_id == _p("id"))

INSERT_CHUNK = PerDialect(sqlite=sa.insert(chunks).values(
    document_id=_p("document_id"), section_ordinal=_p("section_ordinal"), ordinal=_p("ordinal"), text=_p("text"),
    tokens=_p("tokens"), heading=_p("heading"), rev=_p("rev"), embedding=_p("embedding")))
"""SQLite's row inserts (PostgreSQL copies new chunks in with binary ``COPY``)."""

LOG_REMOVALS = sa.insert(removals).from_select(
    ["rev", "chunk_id"],
    sa.select(_p("rev", type_=sa.BigInteger), chunks.c.id).where(chunks.c.document_id == _p("id")))
"""The ids of a document's chunks, logged as removed at ``:rev`` (for the keyword index)."""

FORGET_CHUNKS = sa.delete(chunks).where(chunks.c.document_id == _p("id"))
TRIM_REMOVALS = sa.delete(removals).where(removals.c.rev <= _p("floor"))

PREVIOUS_VECTORS = sa.select(chunks.c.heading, chunks.c.text, chunks.c.embedding).where(
    chunks.c.document_id == _p("id"), chunks.c.embedding.is_not(None))

COUNT_CHUNKS = sa.select(sa.func.count()).select_from(chunks)

PENDING_COUNT = sa.select(sa.func.count()).select_from(chunks).where(
    chunks.c.embedding.is_(None),
    sa.cast(_p("document_id"), sa.Text).is_(None) | (chunks.c.document_id == _p("document_id")))
"""Chunks still waiting for a vector (of one document, or of all when ``:document_id`` is NULL)."""

KEYWORD_CORPUS = sa.select(chunks.c.id, chunks.c.tokens).order_by(chunks.c.id)
CHUNKS_WRITTEN = (sa.select(chunks.c.id, chunks.c.tokens)
                  .where(chunks.c.rev > _p("low"), chunks.c.rev <= _p("high")).order_by(chunks.c.id))
CHUNKS_REMOVED = sa.select(removals.c.chunk_id).where(removals.c.rev > _p("low"), removals.c.rev <= _p("high"))

_ids = PerDialect(
    sqlite=sa.select(sa.column("value", sa.BigInteger)).select_from(sa.func.json_each(_p("ids"))),
    postgresql=sa.select(sa.cast(sa.func.jsonb_array_elements_text(sa.cast(_p("ids"), pg.JSONB)), sa.BigInteger)),
)
"""The ids in ``:ids``, a JSON array (one parameter for any number of ids, compiled once)."""


def _get_chunks(ids: Any) -> Any:
    return (sa.select(chunks.c.id, chunks.c.document_id, documents.c.title, documents.c.source, chunks.c.text,
                      sections.c.text)
            .join(documents, documents.c.id == chunks.c.document_id)
            .join(sections, (sections.c.document_id == chunks.c.document_id)
                  & (sections.c.ordinal == chunks.c.section_ordinal))
            .where(chunks.c.id.in_(ids)))


GET_CHUNKS = PerDialect(sqlite=_get_chunks(_ids.sqlite), postgresql=_get_chunks(_ids.postgresql))
"""The chunks whose ids are in the JSON array ``:ids``, with their document and section."""

# -- owners --------------------------------------------------------------------------------------


def _add_owner(insert: Any) -> Any:
    return insert(owners).values(document_id=_p("document_id"), user_id=_p("user_id")).on_conflict_do_nothing()


ADD_OWNER = with_each_insert(_add_owner)
OWNERS = sa.select(owners.c.user_id).where(owners.c.document_id == _p("document_id"))
OWNED_BY = sa.select(owners.c.document_id).where(owners.c.user_id == _p("user_id"))
RELEASE = sa.delete(owners).where(owners.c.document_id == _p("document_id"), owners.c.user_id == _p("user_id"))
ANY_OWNER: Any = sa.select(sa.literal_column("1")).select_from(owners).where(
    owners.c.document_id == _p("document_id")).limit(1)
FORGET_OWNERS = sa.delete(owners).where(owners.c.document_id == _p("id"))
HIDDEN_FROM = sa.select(owners.c.document_id).distinct().where(owners.c.document_id.not_in(
    sa.select(owners.c.document_id).where(owners.c.user_id == _p("user_id"))))
"""Documents other users own and ``:user_id`` does not (documents nobody owns are shared)."""

# -- vectors filled after the write --------------------------------------------------------------

_pending = (sa.select(chunks.c.id, chunks.c.heading, chunks.c.text)
            .where(chunks.c.embedding.is_(None),
                   sa.cast(_p("document_id"), sa.Text).is_(None) | (chunks.c.document_id == _p("document_id")))
            .order_by(chunks.c.id).limit(_p("limit")))
CLAIM = PerDialect(
    sqlite=_pending.where(chunks.c.id.not_in(sa.select(claims.c.chunk_id))),
    postgresql=_pending.with_for_update(skip_locked=True),
)
"""Up to ``:limit`` chunks waiting for a vector that no other filler holds (SQLite: no claim row;
PostgreSQL: rows locked by this transaction, others' skipped)."""

STORE_VECTOR = sa.update(chunks).where(chunks.c.id == _p("id"), chunks.c.embedding.is_(None)).values(
    embedding=_p("embedding"))
"""A chunk's vector, if it is still waiting for one (a chunk removed meanwhile matches no row)."""

VECTORS = sa.select(chunks.c.id, chunks.c.embedding).where(chunks.c.embedding.is_not(None)).order_by(chunks.c.id)

_distance = chunks.c.embedding.op("<=>", return_type=sa.Float)(_p("query"))
NEAREST = PerDialect(postgresql=sa.select(chunks.c.id, 1 - _distance)
                     .where(chunks.c.embedding.is_not(None)).order_by(_distance).limit(_p("k")))
"""pgvector: the ``:k`` chunks nearest to ``:query`` by cosine distance, with their cosine."""

CLAIMED_PIDS = PerDialect(sqlite=sa.select(claims.c.pid).distinct())
CLAIM_ROW = PerDialect(sqlite=sa.insert(claims).values(chunk_id=_p("chunk_id"), pid=_p("pid"), until=_p("until")))
FORGET_CLAIMS_OF = PerDialect(sqlite=sa.delete(claims).where(claims.c.pid == _p("pid")))
FORGET_EXPIRED_CLAIMS = PerDialect(sqlite=sa.delete(claims).where(claims.c.until < _p("now")))
RELEASE_CLAIM = PerDialect(sqlite=sa.delete(claims).where(claims.c.chunk_id == _p("chunk_id")))

# -- the chunk table, and the extension --------------------------------------------------------

_sqlite_master = sa.table("sqlite_master", sa.column("type"), sa.column("name"))
HAS_CHUNK_TABLE = PerDialect(
    sqlite=sa.select(sa.literal_column("1")).select_from(_sqlite_master).where(
        _sqlite_master.c.type == "table", _sqlite_master.c.name == "rag_chunks"),
    postgresql=sa.select(sa.func.to_regclass("rag_chunks").is_not(None)),
)
DROP_CHUNK_TABLE = sa.schema.DropTable(chunks)

_pg_extension = sa.table("pg_extension", sa.column("extname"))
HAS_PGVECTOR = PerDialect(postgresql=sa.select(sa.literal_column("1")).select_from(_pg_extension).where(
    _pg_extension.c.extname == "vector"))
LOCK_SCHEMA = PerDialect(postgresql=sa.select(sa.func.pg_advisory_xact_lock(7261)))
"""Two processes creating the chunk table at once: the second waits for the first."""
