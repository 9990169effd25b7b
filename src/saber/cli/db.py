"""``saber db``: bring the database to the newest schema, or show where it is."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console

db_app = typer.Typer(help="The database: schema migrations.", no_args_is_help=True)
_out = Console(highlight=False, soft_wrap=True)
_err = Console(stderr=True, highlight=False, soft_wrap=True)

Url = Annotated[str | None, typer.Option("--url", help="Database: a postgresql:// URL or a SQLite file "
                                                       "(default: the configured database).")]


def _target(url: str | None) -> str:
    from saber.config import ConfigError, Settings

    if url:
        return url
    try:
        settings = Settings.load()
    except ConfigError as exc:
        _err.print(f"saber: error: {exc}", markup=False)
        raise typer.Exit(2) from None
    return settings.database.url or str(settings.sqlite_path)


@db_app.command("upgrade")
def upgrade_command(url: Url = None) -> None:
    """Apply every pending migration (each process also does this when it first opens the database)."""
    from saber.db.database import DatabaseError, open_database
    from saber.db.migrate import current, head

    target = _target(url)
    try:
        db = open_database(target)
    except DatabaseError as exc:
        _err.print(f"saber: error: {exc}", markup=False)
        raise typer.Exit(1) from None
    try:
        _out.print(f"{db.display}: schema at revision {current(db)} (newest: {head()})", markup=False)
    finally:
        db.close()


@db_app.command("current")
def current_command(url: Url = None) -> None:
    """Show the schema revision of the database without changing it."""
    from saber.db.database import Database, DatabaseError
    from saber.db.migrate import current, head, known

    target = _target(url)
    try:
        db = Database(target)
        try:
            revision = current(db)
        finally:
            db.dispose()
    except (DatabaseError, OSError) as exc:
        _err.print(f"saber: error: {exc}", markup=False)
        raise typer.Exit(1) from None
    if revision == head():
        state = "up to date"
    elif revision is not None and not known(revision):
        state = f"newer than this Saber (its newest is {head()}): upgrade Saber"
    else:
        state = f"pending migrations up to {head()} (run: saber db upgrade)"
    _out.print(f"{db.display}: schema at revision {revision or 'none'}, {state}", markup=False)
