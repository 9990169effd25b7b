"""``saber ingest PATH...`` and ``saber docs list|show|rm|index`` (mounted by the main CLI).

``saber ingest`` returns its files keyword-searchable first (and says how fast), then shows the
vector filler's progress and waits until every chunk has its vector; ``--no-wait`` returns at
once, Ctrl-C leaves the rest pending (exit 130): ``saber docs index`` or a running server fills it.
When the embedder fails, ``ingest`` and ``docs index`` end with one ``saber: error:`` line naming
it (exit 1; the chunks stay keyword-searchable), and ``docs list``/``show`` say that the last
attempt to embed the pending chunks failed, and why (any process's attempt: it is in the store).

Export: ``ingest_command`` (a function for ``app.command("ingest")``) and ``docs_app`` (a Typer
sub-app for ``app.add_typer(docs_app, name="docs")``).

Nothing heavy is imported at module level (``saber --help`` stays fast); the engine, the store and
the embedder load when a command runs. Document text and titles are printed as plain text, never
as rich markup; ``docs show ID > file`` writes the stored text exactly.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from saber.cli.output import (
    EXIT_USAGE,
    CLIError,
    Interrupted,
    err,
    line,
    out,
    plain,
    print_json,
    write_raw,
)

if TYPE_CHECKING:
    from saber.rag.documents import Document
    from saber.rag.engine import RagEngine
    from saber.rag.filler import FillStatus

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
    given: Annotated[list[str], typer.Argument(help="Files or folders (.txt .md .html .pdf .docx)", show_default=False,
                                               metavar="PATH")],
    no_wait: Annotated[bool, typer.Option("--no-wait", help="Return once the files are keyword-searchable; their "
                                          "vectors are made later (saber docs index, or a running server).")] = False,
) -> None:
    """Add files to the knowledge base; unchanged files are skipped, changed ones get a new version."""
    if any(not p.strip() for p in given):  # Path("") is "." : an empty argument must not ingest this folder
        raise CLIError("empty path: give a file or folder ('.' for this folder)", EXIT_USAGE)
    paths = [Path(p) for p in given]
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        raise CLIError(f"no such file or folder: {', '.join(missing)}", EXIT_USAGE)
    files = list(_files(paths))
    if not files:
        raise CLIError("no supported files found (.txt .md .html .pdf .docx)")
    engine = _engine()
    engine.background_vectors = False  # this command embeds after every file is searchable, and shows it
    try:
        started = time.perf_counter()
        counts, chunks, size, failures, pending_files = _ingest_all(engine, files)
        seconds = time.perf_counter() - started
        out().print(
            f"{len(files)} file(s): {counts['created']} added, {counts['new_version']} new version(s), "
            f"{counts['unchanged']} unchanged, {counts['failed']} failed; {chunks} chunk(s) indexed", markup=False
        )
        if size:
            rate = f", {size / 1024 / seconds:,.1f} KB/s" if seconds >= RATE_AFTER else ""  # not a 0.01 s guess
            out().print(f"searchable by keyword after {seconds:.2f} s ({size / 1024:,.1f} KB{rate})", markup=False)
        if counts["kept"]:
            out().print(f"vectors: {counts['kept']} chunk(s) unchanged from the previous version(s) kept theirs",
                        markup=False)
        for message in failures:
            err().print(line(("  ✗ ", "red"), message))
        vectors_off = _offline_notes(engine)  # no model to embed with: keyword search only, as it says
        if no_wait and not vectors_off:
            pending = engine.pending_count()
            if pending:
                out().print(f"vectors: {pending} chunk(s) pending; {FINISH_HINT}", markup=False)
        elif not vectors_off:
            _fill_with_progress(engine, _searchable(pending_files))
    finally:
        engine.close(filler_timeout=0)
    if counts["failed"]:
        raise CLIError(f"{counts['failed']} of {len(files)} file(s) could not be ingested (see above)")


def _offline_notes(engine: RagEngine) -> bool:
    """Say what the core install (without the ``offline`` extra) leaves out of this knowledge base:
    the bundled embedding model (so no vectors: True)."""
    from saber.rag.embedder import model_missing

    missing = model_missing(engine.embedder)
    if missing is not None:
        err().print(line(("note: ", "yellow"), f"{missing}; until then vectors are off and keyword search "
                         "finds the documents"))
    return missing is not None


RATE_AFTER = 0.5
"""Seconds below which a rate is not printed: a tiny file's rate measures the clock, not the ingest."""

FINISH_HINT = ("keyword search finds them now, vector search once embedded by `saber docs index` "
               "or a running `saber serve`")


def _searchable(names: list[str]) -> str:
    """The start of the error when an ingest's vectors fail: which files are searchable anyway."""
    if len(names) == 1:
        return f"{names[0]} is keyword-searchable, but its vectors"
    if names:
        return f"{len(names)} files are keyword-searchable, but their vectors"
    return "the files are keyword-searchable, but the pending vectors"


def _ingest_all(engine: RagEngine, files: list[tuple[Path, bool]]
                ) -> tuple[dict[str, int], int, int, list[str], list[str]]:
    """Write every file keyword-searchable (vectors left pending): counts, chunks, bytes written,
    failures, and the names of the files whose vectors are pending."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from saber.rag.documents import RagError

    counts = {"created": 0, "new_version": 0, "unchanged": 0, "indexed": 0, "failed": 0, "kept": 0}
    chunks = size = 0
    failures: list[str] = []
    pending: list[str] = []
    with Progress(TextColumn("{task.description}", markup=False), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=err(), transient=True, disable=not err().is_terminal) as progress:
        overall = progress.add_task("files", total=len(files))
        for path, _named in files:
            try:
                result = engine.ingest_file(path, wait=False)
            except RagError as exc:
                counts["failed"] += 1
                failures.append(str(exc))
            else:
                counts[result.status] += 1
                if result.status != "unchanged":
                    chunks += result.chunks
                    size += path.stat().st_size
                if result.status == "new_version":  # its unchanged chunks kept their vectors
                    counts["kept"] += result.document.embedded_count
                if result.document.search == "keyword":
                    pending.append(path.name)
            progress.advance(overall)
    return counts, chunks, size, failures, pending


def _fill_with_progress(engine: RagEngine, subject: str = "vectors") -> None:
    """Embed every pending chunk in a worker thread, showing progress; Ctrl-C leaves the rest pending.
    A failure ends the command with one line: ``{subject} could not be computed: {why}; …``."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    total = engine.pending_count()
    if not total:
        return
    stop = threading.Event()
    started = time.perf_counter()
    try:
        with Progress(TextColumn("vectors", markup=False), BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn(), console=err(), transient=True, disable=not err().is_terminal) as progress:
            task = progress.add_task("vectors", total=total)
            pending = total
            while pending:
                failure = _fill_pass(engine, stop, lambda left: progress.update(task, completed=total - left))
                pending = engine.pending_count()
                progress.update(task, completed=total - pending)
                if failure is not None:
                    raise CLIError(f"{subject} could not be computed: {failure}; {pending} chunk(s) stay "
                                   "keyword-searchable only, until `saber docs index` (or a running "
                                   "`saber serve`) embeds them once the embedder works")
                if pending:
                    stop.wait(1.0)  # another process holds them (PostgreSQL): look again
    except KeyboardInterrupt:
        stop.set()
        left = engine.pending_count()
        raise Interrupted(detail=f"{left} chunk(s) still without vectors; {FINISH_HINT}") from None
    seconds = time.perf_counter() - started
    rate = f" ({total / seconds:,.1f} chunks/s)" if seconds >= RATE_AFTER else ""
    out().print(f"vectors: {total} chunk(s) embedded in {seconds:.1f} s{rate}; hybrid search ready", markup=False)


def _fill_pass(engine: RagEngine, stop: threading.Event, show: Callable[[int], None]) -> str | None:
    """One ``fill_vectors`` in a worker thread (the main thread stays free for Ctrl-C); its error, if any."""
    failure: list[str] = []

    def run() -> None:
        from saber.rag.filler import describe_failure

        try:
            engine.fill_vectors(stop=stop)
        except Exception as exc:  # reported to the user in one line; the chunks stay pending
            failure.append(describe_failure(exc))

    worker = threading.Thread(target=run, name="saber-ingest-vectors", daemon=True)
    worker.start()
    while worker.is_alive():
        worker.join(0.5)
        show(engine.pending_count())
    return failure[0] if failure else None


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

    from saber.cli.ids import shortest_unique

    docs, fill = _with_engine(lambda engine: _with_fill(engine, engine.list_documents()))
    if as_json:
        print_json([_as_dict(d, fill) for d in docs])
        return
    if not docs:
        out().print("the knowledge base is empty", markup=False)
        return
    short = shortest_unique(d.id for d in docs)
    table = Table("id", "title", "type", "version", "chunks", "vectors", "updated")
    table.columns[0].no_wrap = True
    for d in docs:
        table.add_row(plain(short[d.id]), plain(d.title), plain(d.doc_type), str(d.version), str(d.chunk_count),
                      _vectors(d, fill), d.updated_at.strftime("%Y-%m-%d %H:%M"))
    out().print(table)
    _fill_note(fill, sum(d.search == "keyword" for d in docs))


def _with_fill(engine: RagEngine, docs: list[Document]) -> tuple[list[Document], FillStatus | None]:
    """``docs`` and, when some wait for vectors, how that fill is going (the last failure recorded)."""
    return docs, engine.vector_status() if any(d.search == "keyword" for d in docs) else None


def _as_dict(d: Document, fill: FillStatus | None, *, with_content: bool = False) -> dict[str, Any]:
    """``--json``: the document and, while its vectors are pending, ``vectors`` (as the API has it)."""
    data = d.to_dict(with_content=with_content)
    data["vectors"] = fill.to_dict() if fill is not None and d.search == "keyword" else None
    return data


def _vectors(d: Document, fill: FillStatus | None = None) -> str:
    """Chunks with their vector out of all (the rest are keyword-searchable and wait for the filler)."""
    if not d.indexed:
        return "—"
    failing = " failing" if fill is not None and fill.state == "failing" and d.search == "keyword" else ""
    return f"{d.embedded_count}/{d.chunk_count}{failing}"


def _fill_note(fill: FillStatus | None, pending: int) -> None:
    """On stderr, when vectors are pending and the last attempt to embed them failed: when and why."""
    if fill is None or fill.error is None or not pending:
        return
    when = f" at {fill.failed_at.strftime('%Y-%m-%d %H:%M:%S %Z')}" if fill.failed_at else ""
    retry = f"; retrying in {fill.retry_in_s:.0f} s" if fill.retry_in_s is not None else ""
    err().print(line(("note: ", "yellow"), f"{pending} document(s) wait for vectors (keyword search finds them "
                     f"meanwhile); the last attempt to embed them failed{when}: {fill.error}{retry}"))


@docs_app.command("index")
def docs_index() -> None:
    """Embed the chunks still without vectors (after `ingest --no-wait`, an interrupted ingest or a killed process)."""
    engine = _engine()
    try:
        if not engine.pending_count():
            out().print("every chunk has its vector", markup=False)
            return
        _fill_with_progress(engine)
    finally:
        engine.close(filler_timeout=0)


def _resolve(engine: RagEngine, prefix: str) -> str:
    from saber.cli.ids import resolve

    return resolve(prefix, (d.id for d in engine.list_documents()), "document")


@docs_app.command("show")
def docs_show(
    document_id: Annotated[str, typer.Argument(help="A document id, or any unique prefix of one.", show_default=False,
                                                  metavar="DOCUMENT_ID")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON: the details, vectors and text.")] = False,
) -> None:
    """One document's details and text; into a file or a pipe, exactly the stored text."""

    def show(engine: RagEngine) -> tuple[list[Document], FillStatus | None]:
        return _with_fill(engine, [engine.get_document(_resolve(engine, document_id))])

    [d], fill = _with_engine(show)
    if as_json:
        print_json(_as_dict(d, fill, with_content=True))
        return
    text = d.content or ""
    if not sys.stdout.isatty():
        write_raw(text)
        return
    console = out()
    console.print(line((d.title, "bold"), f"  ({d.doc_type}, version {d.version}, {d.chunk_count} chunks, "
                                          f"vectors {_vectors(d, fill)}, search: {d.search})"))
    console.print(line(("id ", "dim"), d.id, ("  source ", "dim"), d.source or "—", ("  sha256 ", "dim"), d.content_hash))
    _fill_note(fill, int(d.search == "keyword"))
    console.print()
    console.print(plain(text))


@docs_app.command("rm")
def docs_rm(
    document_ids: Annotated[list[str], typer.Argument(help="Document ids, or unique prefixes of them.", show_default=False,
                                                        metavar="DOCUMENT_ID")],
) -> None:
    """Remove documents, their versions and their chunks."""

    def remove(engine: RagEngine) -> tuple[int, list[CLIError]]:
        from saber.cli.ids import resolve

        known = [d.id for d in engine.list_documents()]
        problems: list[CLIError] = []
        removed = 0
        for given in document_ids:
            try:
                full = resolve(given, known, "document")
            except CLIError as exc:
                problems.append(exc)
                continue
            if engine.delete_document(full):
                removed += 1
                known.remove(full)
        return removed, problems

    removed, problems = _with_engine(remove)
    if removed or not problems:
        out().print(f"removed {removed} document(s)", markup=False)
    if problems:  # a usage mistake (an empty or ambiguous id) outranks an unknown id
        raise CLIError("; ".join(str(p) for p in problems), max(p.code for p in problems))
