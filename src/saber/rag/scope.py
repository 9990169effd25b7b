"""Whose request is running, for the knowledge base: on a server with API keys each user sees the
shared documents (``saber ingest``) and their own, never another user's.

The agent sets the scope for the whole of a request (a context variable: tools, sub-agents and
worker threads started from the request inherit it); the engine's ``search`` and
``list_documents`` and the knowledge tools read it. Outside a request (the CLI's ``saber docs``,
the server's document API, which checks owners itself) there is none and nothing is hidden.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class KnowledgeScope:
    user_id: str
    isolated: bool
    """Other users' documents are hidden (a server with API keys). Without keys there is one
    trusted local user and every document is shared; ownership is still recorded."""


_scope: contextvars.ContextVar[KnowledgeScope | None] = contextvars.ContextVar("saber_knowledge_scope", default=None)


def current_scope() -> KnowledgeScope | None:
    return _scope.get()


@contextlib.contextmanager
def knowledge_scope(user_id: str, *, isolated: bool) -> Iterator[KnowledgeScope]:
    scope = KnowledgeScope(user_id=user_id, isolated=isolated)
    token = _scope.set(scope)
    try:
        yield scope
    finally:
        _scope.reset(token)
