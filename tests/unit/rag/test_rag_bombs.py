"""Issue 28, item 3: decompression bombs. A small .docx or PDF that inflates to hundreds of MB is
refused while it is read — with an error naming the limit, in bounded memory — and leaves nothing
in the knowledge base; a forged zip header does not get past the count of inflated bytes."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from bombs import MB, docx_bomb, forge_size, pdf_bomb

from saber.rag import RagEngine
from saber.rag.documents import FileTooLarge, RagError
from saber.rag.limits import IngestCancelled, LimitExceeded, ReadLimits
from saber.rag.loaders import load_file


@pytest.fixture(scope="module")
def bombs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Built once: a 200 MB-of-spaces .docx (~240 KB), the same with a forged size, a 200 MB PDF stream (~200 KB)."""
    folder = tmp_path_factory.mktemp("bombs")
    docx = docx_bomb(folder / "bomb.docx", 200)
    forged = folder / "forged.docx"
    shutil.copy(docx, forged)
    forge_size(forged, "word/document.xml", 1000)
    return {"docx": docx, "forged": forged, "pdf": pdf_bomb(folder / "bomb.pdf", 200)}


def _refused(path: Path, limits: ReadLimits | None = None) -> LimitExceeded:
    with pytest.raises(LimitExceeded) as caught:
        load_file(path, limits=limits)
    return caught.value


def test_a_docx_bomb_is_refused_by_its_ratio_before_it_is_inflated(bombs: dict[str, Path]) -> None:
    assert bombs["docx"].stat().st_size < 400 * 1024
    error = _refused(bombs["docx"])
    assert error.setting == "rag.max_ratio" and isinstance(error, FileTooLarge)
    assert str(error).startswith("bomb.docx: word/document.xml inflates 1,")
    assert "(rag.max_ratio)" in str(error)


def test_a_docx_bomb_within_the_ratio_is_refused_by_its_inflated_size(bombs: dict[str, Path]) -> None:
    error = _refused(bombs["docx"], ReadLimits(max_ratio=100_000))
    assert error.setting == "rag.max_inflated_mb"
    assert "would inflate to 200.0 MB" in str(error) and "100 MB limit (rag.max_inflated_mb)" in str(error)


def test_a_forged_zip_size_is_caught_as_the_member_inflates(bombs: dict[str, Path]) -> None:
    with pytest.raises(RagError, match=r"forged\.docx: word/document\.xml inflates past the 1,000 bytes its zip "
                                       r"header declares"):
        load_file(bombs["forged"])


def test_a_pdf_whose_stream_inflates_past_the_limit_is_refused(bombs: dict[str, Path]) -> None:
    error = _refused(bombs["pdf"])
    assert error.setting == "rag.max_ratio"
    assert str(error).startswith("bomb.pdf: a stream inflates past 19.5 MB, the limit (rag.max_ratio)")
    error = _refused(bombs["pdf"], ReadLimits(max_ratio=100_000, max_inflated_bytes=50 * MB))
    assert error.setting == "rag.max_inflated_mb"


def test_extracted_text_is_limited(tmp_path: Path) -> None:
    import docx

    d = docx.Document()
    for i in range(300):
        d.add_paragraph(f"paragraph {i} of a long report")
    d.save(str(tmp_path / "long.docx"))
    (tmp_path / "long.txt").write_text("words " * 1000, encoding="utf-8")
    for name in ("long.docx", "long.txt"):
        error = _refused(tmp_path / name, ReadLimits(max_text_chars=2000))
        assert error.setting == "rag.max_text_chars"
        assert "more than 2,000 characters of text, over the limit (rag.max_text_chars)" in str(error)
    assert "paragraph 299" in load_file(tmp_path / "long.docx").text  # within the default limits


def test_a_cancelled_read_stops(tmp_path: Path) -> None:
    import docx

    d = docx.Document()
    d.add_paragraph("hello")
    d.save(str(tmp_path / "a.docx"))
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(IngestCancelled, match="a.docx: the ingest was cancelled"):
        load_file(tmp_path / "a.docx", cancel=cancel)


@pytest.mark.parametrize("name", ["docx", "forged", "pdf"])
def test_the_knowledge_base_keeps_no_trace_of_a_bomb(bombs: dict[str, Path], engine: RagEngine, name: str) -> None:
    with pytest.raises(RagError):
        engine.ingest_file(bombs[name])
    assert engine.list_documents() == []
    assert engine.store.chunk_count() == 0


_MEASURE = """
import json, resource, sys
from saber.rag.loaders import load_file
import docx, pypdf
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    load_file(sys.argv[1])
    error = None
except Exception as exc:
    error = type(exc).__name__
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"error": error, "grew_mb": (after - before) / 1024}))
"""


@pytest.mark.parametrize("name", ["docx", "forged", "pdf"])
def test_reading_a_bomb_takes_bounded_memory(bombs: dict[str, Path], name: str) -> None:
    """Peak RSS of a fresh process reading the bomb grows far less than the 200 MB it inflates to."""
    run = subprocess.run([sys.executable, "-c", _MEASURE, str(bombs[name])], capture_output=True, text=True,
                         check=True, timeout=120)
    measured = json.loads(run.stdout)
    assert measured["error"] in ("LimitExceeded", "RagError")
    assert measured["grew_mb"] < 80, measured


def test_saber_ingest_reports_a_bomb_in_one_line_and_stores_nothing(bombs: dict[str, Path], tmp_path: Path) -> None:
    import typer
    from typer.testing import CliRunner

    from saber.cli.knowledge import ingest_command, set_engine_factory
    from saber.cli.output import CLIError
    from saber.rag import HashingEmbedder, SQLiteStore

    db = tmp_path / "saber.db"
    set_engine_factory(lambda: RagEngine(SQLiteStore(db), HashingEmbedder(256)))
    try:
        app = typer.Typer()
        app.command("ingest")(ingest_command)
        app.command("unused")(lambda: None)
        result = CliRunner().invoke(app, ["ingest", str(bombs["docx"])])
    finally:
        set_engine_factory(None)
    assert isinstance(result.exception, CLIError)
    lines = [line for line in result.output.splitlines() if "bomb.docx" in line]
    assert len(lines) == 1 and "(rag.max_ratio)" in lines[0], result.output
    assert RagEngine(SQLiteStore(db), HashingEmbedder(256)).list_documents() == []


def test_the_limits_come_from_the_rag_settings(tmp_path: Path, bombs: dict[str, Path]) -> None:
    from saber.config import Settings
    from saber.rag import engine_from_settings

    engine = engine_from_settings(Settings(home=tmp_path,
                                           rag={"max_inflated_mb": 150, "max_ratio": 5000,
                                                "max_text_chars": 50_000}))
    (tmp_path / "long.txt").write_text("words " * 10_000, encoding="utf-8")
    try:
        assert engine.read_limits == ReadLimits(max_inflated_bytes=150 * MB, max_ratio=5000, max_text_chars=50_000)
        with pytest.raises(LimitExceeded, match=r"150 MB limit \(rag\.max_inflated_mb\)"):
            engine.ingest_file(bombs["docx"])  # within 5000:1: the 200 MB passes the ratio, not the size
        with pytest.raises(LimitExceeded, match=r"more than 50,000 characters"):
            engine.ingest_file(tmp_path / "long.txt")
        assert engine.list_documents() == []
    finally:
        engine.close()
