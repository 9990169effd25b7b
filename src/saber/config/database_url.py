"""What a database URL setting may be: a PostgreSQL URL (checked when settings are read), shown
with its password masked. The storage layer (``saber.db``) uses the same rules."""

from __future__ import annotations

POSTGRES_SCHEMES = ("postgres", "postgresql", "postgresql+psycopg")


def mask_url(url: str) -> str:
    """The URL with any password replaced by ``***`` (``scheme://user:password@host``; the last
    ``@`` ends the credentials, so a password with an unescaped ``@`` is hidden whole)."""
    if "@" in url and "://" in url:
        scheme, rest = url.split("://", 1)
        creds, host = rest.rsplit("@", 1)
        if ":" in creds:
            creds = creds.split(":", 1)[0] + ":***"
        return f"{scheme}://{creds}@{host}"
    return url


def postgres_url_problem(url: str) -> str | None:
    """Why ``url`` is not a PostgreSQL URL (its password masked), or None when it is one."""
    scheme = url.split("://", 1)[0] if "://" in url else ""
    if scheme in POSTGRES_SCHEMES:
        return None
    return (f"{mask_url(url)!r} is not a PostgreSQL URL (postgresql://user:password@host/database); "
            "leave it unset for the SQLite database in SABER_HOME")
