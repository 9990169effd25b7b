"""Databases for the storage-layer tests: SQLite files under tmp_path, and PostgreSQL with
pgvector — the server named by ``SABER_TEST_PGVECTOR_URL`` (an admin URL; tests create and drop
their own databases on it), else one started from the ``pgserver`` wheel (it ships pgvector)."""

from __future__ import annotations


