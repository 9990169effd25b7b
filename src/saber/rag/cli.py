"""``saber ingest PATH...`` and ``saber docs list|show|rm`` (mounted by the main CLI).

Export: ``ingest_command`` (a function for ``app.command("ingest")``) and ``docs_app`` (a Typer
sub-app for ``app.add_typer(docs_app, name="docs")``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from saber.rag.documents import RagError
from saber.rag.engine import RagEngine
from saber.rag.loaders import is_supported

console = Console()
docs_app = typer.Typer(help="List, show and remove knowledge-base documents.", no_args_is_help=True)

_engine_factory: Callable[[], RagEngine] | None = None


def set_engine_factory(factory: Callable[[], RagEngine] | None) -> None:
    """Use ``factory`` instead of building the engine from Settings (tests, embedding applications)."""
    global _engine_factory
    _engine_factory = factory


def _engine() -> RagEngine:
    if _engine_factory is not None:
        return _engine_factory()
    from saber.rag.factory import engine_from_settings

    try:
        return engine_from_settings()
    except (RagError, ValueError) as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None


def _files(paths: list[Path]) -> Iterator[tuple[Path, bool]]:
    """(file, explicitly named) for each file; folders are walked for supported types."""
    for p in paths:
        if p.is_dir():
            for f in sorted(p.rglob("*")):
                if f.is_file() and not any(part.startswith(".") for part in f.relative_to(p).parts) and is_supported(f):
                    yield f, False
        else:
            yield p, True


def ingest_command(
    paths: Annotated[list[Path], typer.Argument(help="Files or folders (.txt .md .html .pdf .docx)")],
) -> None:
    """Add files to the knowledge base; unchanged files are skipped, changed ones get a new version."""
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        console.print(f"[red]error:[/red] no such file or folder: {', '.join(missing)}")
        raise typer.Exit(2)
    files = list(_files(paths))
    if not files:
        console.print("[yellow]no supported files found[/yellow]")
        raise typer.Exit(1)
    engine = _engine()
    counts = {"created": 0, "new_version": 0, "unchanged": 0, "indexed": 0, "failed": 0}
    chunks = 0
    failures: list[str] = []
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, transient=False) as progress:
        overall = progress.add_task("files", total=len(files))
        for path, _named in files:
            task = progress.add_task(f"  {path.name}", total=None)

            def on_progress(done: int, total: int, task_id: TaskID = task) -> None:
                progress.update(task_id, completed=done, total=total)

            try:
                result = engine.ingest_file(path, on_progress=on_progress)
            except RagError as exc:
                counts["failed"] += 1
                failures.append(str(exc))
            else:
                counts[result.status] += 1
                chunks += result.chunks if result.status != "unchanged" else 0
            progress.remove_task(task)
            progress.advance(overall)
    console.print(
        f"{len(files)} file(s): {counts['created']} added, {counts['new_version']} new version(s), "
        f"{counts['unchanged']} unchanged, {counts['failed']} failed; {chunks} chunk(s) indexed"
    )
    for line in failures:
        console.print(f"[red]  ✗[/red] {line}")
    if counts["failed"]:
        raise typer.Exit(1)


@docs_app.command("list")
def docs_list() -> None:
    """Documents in the knowledge base."""
    docs = _engine().list_documents()
    if not docs:
        console.print("the knowledge base is empty")
        return
    table = Table("id", "title", "type", "version", "chunks", "updated")
    for d in docs:
        table.add_row(d.id, d.title, d.doc_type, str(d.version), str(d.chunk_count), d.updated_at.strftime("%Y-%m-%d %H:%M"))
    console.print(table)


@docs_app.command("show")
def docs_show(document_id: str) -> None:
    """One document's details and text."""
    try:
        d = _engine().get_document(document_id)
    except RagError as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(1) from None
    console.print(f"[bold]{d.title}[/bold]  ({d.doc_type}, version {d.version}, {d.chunk_count} chunks)")
    console.print(f"id {d.id}  source {d.source}  sha256 {d.content_hash[:12]}…")
    console.print(d.content or "", markup=False, highlight=False)


@docs_app.command("rm")
def docs_rm(document_ids: Annotated[list[str], typer.Argument(help="Document ids")]) -> None:
    """Remove documents, their versions and their chunks."""
    engine = _engine()
    missing = [i for i in document_ids if not engine.delete_document(i)]
    removed = len(document_ids) - len(missing)
    console.print(f"removed {removed} document(s)")
    if missing:
        console.print(f"[red]no such document:[/red] {', '.join(missing)}")
        raise typer.Exit(1)
