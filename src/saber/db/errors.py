"""The storage layer's one error."""

from __future__ import annotations


class DatabaseError(Exception):
    """The database could not be opened, reached or migrated; the message says which (never a password)."""
