"""The memory stores' statements in SQLAlchemy Core, compiled by ``python -m saber.db.compile`` into
``queries_sql.py``, which ``_sql.SQLMemoryStore`` runs on SQLite and PostgreSQL alike (see
``saber.db.statements``). Every statement is scoped by ``:user_id``."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from saber.db.tables import mem_history as history
from saber.db.tables import mem_memories as memories
from saber.db.tables import mem_preferences as preferences
from saber.db.tables import with_each_insert

_p = sa.bindparam
_MEMORY = tuple(memories.c)
_THIS_MEMORY = (memories.c.user_id == _p("user_id")) & (memories.c.id == _p("id"))

APPEND_HISTORY = sa.insert(history).values(user_id=_p("user_id"), role=_p("role"), content=_p("content"),
                                           created_at=_p("created_at"))

_kept_from = (sa.select(history.c.id).where(history.c.user_id == _p("user_id"))
              .order_by(history.c.id.desc()).limit(1).offset(_p("keep")).scalar_subquery())
TRIM_HISTORY = sa.delete(history).where(history.c.user_id == _p("user_id"), history.c.id <= _kept_from)
"""Everything but the user's newest ``:keep`` turns."""

RECENT_HISTORY = (sa.select(history.c.role, history.c.content, history.c.created_at)
                  .where(history.c.user_id == _p("user_id")).order_by(history.c.id.desc()).limit(_p("n")))
"""The newest ``:n`` turns, newest first."""

CLEAR_HISTORY = sa.delete(history).where(history.c.user_id == _p("user_id"))

PREFERENCES = (sa.select(preferences.c.key, preferences.c.value)
               .where(preferences.c.user_id == _p("user_id")).order_by(preferences.c.key))


def _set_preference(insert: Any) -> Any:
    statement = insert(preferences).values(user_id=_p("user_id"), key=_p("key"), value=_p("value"),
                                           updated_at=_p("updated_at"))
    return statement.on_conflict_do_update(
        index_elements=[preferences.c.user_id, preferences.c.key],
        set_={"value": statement.excluded.value, "updated_at": statement.excluded.updated_at})


SET_PREFERENCE = with_each_insert(_set_preference)

DELETE_PREFERENCE = (sa.delete(preferences)
                     .where(preferences.c.user_id == _p("user_id"), preferences.c.key == _p("key"))
                     .returning(preferences.c.key))

FIND_MEMORY = sa.select(memories.c.id).where(memories.c.user_id == _p("user_id"), memories.c.norm == _p("norm"))
"""The user's memory with this normalised text (at most one: they are unique per user)."""

INSERT_MEMORY = sa.insert(memories).values(
    user_id=_p("user_id"), text=_p("text"), norm=_p("norm"), importance=_p("importance"), created_at=_p("now"),
    last_used_at=_p("now"), uses=1, source=_p("source"), embedder=_p("embedder"), vector=_p("vector"),
).returning(*_MEMORY)

MEMORY_IMPORTANCE = sa.select(memories.c.importance).where(_THIS_MEMORY)

OTHER_WITH_NORM = sa.select(memories.c.id).where(
    memories.c.user_id == _p("user_id"), memories.c.norm == _p("norm"), memories.c.id != _p("id"))

_used_again = {"importance": _p("importance"), "last_used_at": _p("now"), "uses": memories.c.uses + 1}
MERGE_MEMORY = sa.update(memories).where(_THIS_MEMORY).values(
    text=_p("text"), norm=_p("norm"), vector=_p("vector"), embedder=_p("embedder"), **_used_again,
).returning(*_MEMORY)
"""A memory said again in new words: the new wording, its importance merged, used once more."""

MERGE_MEMORY_KEEP_TEXT = sa.update(memories).where(_THIS_MEMORY).values(**_used_again).returning(*_MEMORY)
"""The same, keeping the old wording (the new one is another memory's)."""

LIST_MEMORIES = sa.select(*_MEMORY).where(memories.c.user_id == _p("user_id")).order_by(memories.c.id)

TOUCH_MEMORY = sa.update(memories).where(_THIS_MEMORY).values(last_used_at=_p("now"), uses=memories.c.uses + 1)

SET_VECTOR = sa.update(memories).where(_THIS_MEMORY).values(vector=_p("vector"), embedder=_p("embedder"))

DELETE_MEMORY = sa.delete(memories).where(_THIS_MEMORY).returning(memories.c.id)

FORGET_PREFERENCES = sa.delete(preferences).where(preferences.c.user_id == _p("user_id"))
FORGET_MEMORIES = sa.delete(memories).where(memories.c.user_id == _p("user_id"))
