"""``saber ingest PATH...`` and ``saber docs list|show|rm`` (mounted by the main CLI).

Export: ``ingest_command`` (a function for ``app.command("ingest")``) and ``docs_app`` (a Typer
sub-app for ``app.add_typer(docs_app, name="docs")``).

Nothing heavy is imported at module level (``saber --help`` stays fast); the engine, the store and
the embedder load when a command runs. Document text and titles are printed as plain text, never
as rich markup; ``docs show ID > file`` writes the stored text exactly.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from saber.clikit.output import EXIT_USAGE, CLIError, err, line, out, plain, print_json, write_raw

if TYPE_CHECKING:
    from saber.rag.engine import RagEngine

docs_app = typer.Typer(help="List, show and remove knowledge-base documents.", no_args_is_help=True,
                       rich_markup_mode=None)

_engine_factory: Callable[[], RagEngine] | None = None


def set_engine_factory(factory: Callable[[], RagEngine] | None) -> None:
    """Use ``factory`` instead of building the engine from Settings (tests, embedding applications)."""
    global _engine_factory
    _engine_factory = factory


def _engine() -> RagEngine:
    if _engine_factory is not None:
        return _engine_factory()
    from saber.rag.documents import RagError
    from saber.rag.factory import engine_from_settings

    try:
        return engine_from_settings()
    except (RagError, ValueError) as exc:
        raise CLIError(str(exc), EXIT_USAGE) from None
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        reason = "exists and is not a folder (check SABER_HOME)" if isinstance(exc, (FileExistsError, NotADirectoryError)) \
            else (exc.strerror or str(exc))
        raise CLIError(f"cannot open the knowledge base: {where}{reason}", EXIT_USAGE) from None


def _files(paths: list[Path]) -> Iterator[tuple[Path, bool]]:
    """(file, explicitly named) for each file; folders are walked for supported types."""
    from saber.rag.loaders import is_supported

    for p in paths:
        if p.is_dir():
            for f in sorted(p.rglob("*")):
                if f.is_file() and not any(part.startswith(".") for part in f.relative_to(p).parts) and is_supported(f):
                    yield f, False
        else:
            yield p, True


def ingest_command(
    paths: Annotated[list[Path], typer.Argument(help="Files or folders (.txt .md .html .pdf .docx)", show_default=False,
                                                metavar="PATH")],
) -> None:
    """Add files to the knowledge base; unchanged files are skipped, changed ones get a new version."""
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        raise CLIError(f"no such file or folder: {', '.join(missing)}", EXIT_USAGE)
    files = list(_files(paths))
    if not files:
        raise CLIError("no supported files found (.txt .md .html .pdf .docx)")
    engine = _engine()
    try:
        counts, chunks, failures = _ingest_all(engine, files)
    finally:
        engine.close()
    out().print(
        f"{len(files)} file(s): {counts['created']} added, {counts['new_version']} new version(s), "
        f"{counts['unchanged']} unchanged, {counts['failed']} failed; {chunks} chunk(s) indexed", markup=False
    )
    for message in failures:
        err().print(line(("  ✗ ", "red"), message))
    if counts["failed"]:
        raise CLIError(f"{counts['failed']} of {len(files)} file(s) could not be ingested (see above)")


def _ingest_all(engine: RagEngine, files: list[tuple[Path, bool]]) -> tuple[dict[str, int], int, list[str]]:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

    from saber.rag.documents import RagError

    counts = {"created": 0, "new_version": 0, "unchanged": 0, "indexed": 0, "failed": 0}
    chunks = 0
    failures: list[str] = []
    with Progress(TextColumn("{task.description}", markup=False), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=err(), transient=True) as progress:
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
    return counts, chunks, failures


def _with_engine(use: Callable[[RagEngine], Any]) -> Any:
    engine = _engine()
    try:
        return use(engine)
    finally:
        engine.close()


@docs_app.command("list")
def docs_list(as_json: Annotated[bool, typer.Option("--json", help="Print JSON (full ids).")] = False) -> None:
    """Documents in the knowledge base (ids shortened to a unique prefix; any unique prefix is accepted)."""
    from rich.table import Table

    from saber.clikit.ids import shortest_unique

    docs = _with_engine(lambda engine: engine.list_documents())
    if as_json:
        print_json([d.to_dict() for d in docs])
        return
    if not docs:
        out().print("the knowledge base is empty", markup=False)
        return
    short = shortest_unique(d.id for d in docs)
    table = Table("id", "title", "type", "version", "chunks", "updated")
    table.columns[0].no_wrap = True
    for d in docs:
        table.add_row(plain(short[d.id]), plain(d.title), plain(d.doc_type), str(d.version), str(d.chunk_count),
                      d.updated_at.strftime("%Y-%m-%d %H:%M"))
    out().print(table)


def _resolve(engine: RagEngine, prefix: str) -> str:
    from saber.clikit.ids import resolve

    return resolve(prefix, (d.id for d in engine.list_documents()), "document")


@docs_app.command("show")
def docs_show(
    document_id: Annotated[str, typer.Argument(help="A document id, or any unique prefix of one.", show_default=False,
                                                  metavar="DOCUMENT_ID")],
) -> None:
    """One document's details and text; into a file or a pipe, exactly the stored text."""

    def show(engine: RagEngine) -> Any:
        return engine.get_document(_resolve(engine, document_id))

    d = _with_engine(show)
    text = d.content or ""
    if not sys.stdout.isatty():
        write_raw(text)
        return
    console = out()
    console.print(line((d.title, "bold"), f"  ({d.doc_type}, version {d.version}, {d.chunk_count} chunks)"))
    console.print(line(("id ", "dim"), d.id, ("  source ", "dim"), d.source or "—", ("  sha256 ", "dim"), d.content_hash))
    console.print()
    console.print(plain(text))


@docs_app.command("rm")
def docs_rm(
    document_ids: Annotated[list[str], typer.Argument(help="Document ids, or unique prefixes of them.", show_default=False,
                                                        metavar="DOCUMENT_ID")],
) -> None:
    """Remove documents, their versions and their chunks."""

    def remove(engine: RagEngine) -> tuple[int, list[str]]:
        from saber.clikit.ids import resolve

        known = [d.id for d in engine.list_documents()]
        problems: list[str] = []
        removed = 0
        for given in document_ids:
            try:
                full = resolve(given, known, "document")
            except CLIError as exc:
                problems.append(str(exc))
                continue
            if engine.delete_document(full):
                removed += 1
                known.remove(full)
        return removed, problems

    removed, problems = _with_engine(remove)
    out().print(f"removed {removed} document(s)", markup=False)
    if problems:
        raise CLIError("; ".join(problems))
