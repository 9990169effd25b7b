from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from saber.cli.knowledge import docs_app, ingest_command, set_engine_factory
from saber.cli.output import CLIError, Interrupted
from saber.rag import HashingEmbedder, RagEngine, SQLiteStore


@pytest.fixture
def app(tmp_path: Path) -> Iterator[typer.Typer]:
    db = tmp_path / "saber.db"
    set_engine_factory(lambda: RagEngine(SQLiteStore(db), HashingEmbedder(256)))
    main = typer.Typer()
    main.command("ingest")(ingest_command)
    main.add_typer(docs_app, name="docs")
    yield main
    set_engine_factory(None)


def test_ingest_folder_then_list_show_rm(app: typer.Typer, tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text("# Alpha\n\nAlpha is the first letter.", encoding="utf-8")
    (folder / "b.txt").write_text("高铁是中国的骄傲。", encoding="utf-8")
    (folder / "skip.bin").write_bytes(b"\0\1")
    runner = CliRunner()
    result = runner.invoke(app, ["ingest", str(folder)])
    assert result.exit_code == 0, result.output
    assert "2 file(s): 2 added" in result.output
    again = runner.invoke(app, ["ingest", str(folder)])
    assert "2 unchanged" in again.output
    listed = runner.invoke(app, ["docs", "list"])
    assert "Alpha" in listed.output
    doc = RagEngine(SQLiteStore(tmp_path / "saber.db"), HashingEmbedder(256)).list_documents()[0]
    shown = runner.invoke(app, ["docs", "show", doc.id])  # not a terminal: the stored text, nothing else
    assert shown.exit_code == 0 and shown.output in ("高铁是中国的骄傲。\n", "# Alpha\n\nAlpha is the first letter.\n")
    doc_id = doc.id
    removed = runner.invoke(app, ["docs", "rm", doc_id[:6], "missing-id"])
    assert "removed 1" in removed.output
    assert isinstance(removed.exception, CLIError) and "missing-id" in str(removed.exception)


def test_ingest_reports_failures(app: typer.Typer, tmp_path: Path) -> None:
    (tmp_path / "bad.exe").write_bytes(b"MZ")
    (tmp_path / "empty.md").write_text("", encoding="utf-8")
    result = CliRunner().invoke(app, ["ingest", str(tmp_path / "bad.exe"), str(tmp_path / "empty.md")])
    assert isinstance(result.exception, CLIError) and result.exception.code == 1
    assert "2 failed" in result.output and "unsupported file type .exe" in result.output


def _listed(runner: CliRunner, app: typer.Typer) -> list[dict[str, object]]:
    import json

    result = runner.invoke(app, ["docs", "list", "--json"])
    assert result.exit_code == 0, result.output
    listed: list[dict[str, object]] = json.loads(result.output)
    return listed


def test_ingest_reports_keyword_speed_then_waits_for_the_vectors(app: typer.Typer, tmp_path: Path) -> None:
    (tmp_path / "k8s.md").write_text("# Services\n\n" + "A NodePort service opens a port on every node. " * 30,
                                     encoding="utf-8")
    runner = CliRunner()
    result = runner.invoke(app, ["ingest", str(tmp_path / "k8s.md")])
    assert result.exit_code == 0, result.output
    assert "searchable by keyword after" in result.output
    assert "KB/s" not in result.output  # 1.4 KB in milliseconds: a rate would measure the clock
    assert "chunk(s) embedded in" in result.output and "hybrid search ready" in result.output
    [doc] = _listed(runner, app)
    assert doc["search"] == "hybrid" and doc["embedded_chunks"] == doc["chunk_count"]


def test_ingest_prints_rates_once_they_measure_something(app: typer.Typer, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from saber.cli import knowledge as knowledge_cli

    monkeypatch.setattr(knowledge_cli, "RATE_AFTER", 0.0)
    (tmp_path / "k8s.md").write_text("# Services\n\n" + "A NodePort service opens a port on every node. " * 30,
                                     encoding="utf-8")
    result = CliRunner().invoke(app, ["ingest", str(tmp_path / "k8s.md")])
    assert result.exit_code == 0, result.output
    assert re.search(r"searchable by keyword after [\d.]+ s \(1\.4 KB, [\d,.]+ KB/s\)", result.output), result.output
    assert re.search(r"chunk\(s\) embedded in [\d.]+ s \([\d,.]+ chunks/s\)", result.output), result.output


def test_a_new_version_says_how_many_chunks_kept_their_vectors(app: typer.Typer, tmp_path: Path) -> None:
    path = tmp_path / "cranes.md"
    sections = [f"# Crane {i}\n\n" + f"Crane {i} lifts forty containers an hour at berth {i}. " * 8 for i in range(6)]
    path.write_text("\n\n".join(sections), encoding="utf-8")
    runner = CliRunner()
    first = runner.invoke(app, ["ingest", str(path)])
    assert first.exit_code == 0 and "kept" not in first.output, first.output
    path.write_text("\n\n".join(sections[:5] + [sections[5].replace("forty", "fifty")]), encoding="utf-8")
    second = runner.invoke(app, ["ingest", str(path)])
    assert second.exit_code == 0, second.output
    indexed = int(re.search(r"(\d+) chunk\(s\) indexed", second.output).group(1))  # type: ignore[union-attr]
    kept = int(re.search(r"vectors: (\d+) chunk\(s\) unchanged from the previous version\(s\) kept theirs",
                         second.output).group(1))  # type: ignore[union-attr]
    embedded = int(re.search(r"vectors: (\d+) chunk\(s\) embedded", second.output).group(1))  # type: ignore[union-attr]
    assert kept >= 5 and embedded >= 1 and kept + embedded == indexed


def test_ingest_no_wait_leaves_vectors_to_docs_index(app: typer.Typer, tmp_path: Path) -> None:
    import json

    (tmp_path / "a.md").write_text("# Alpha\n\n" + "Alpha is the first letter of the Greek alphabet. " * 20,
                                   encoding="utf-8")
    runner = CliRunner()
    result = runner.invoke(app, ["ingest", "--no-wait", str(tmp_path / "a.md")])
    assert result.exit_code == 0, result.output
    assert "pending" in result.output and "saber docs index" in result.output
    [doc] = _listed(runner, app)
    assert doc["search"] == "keyword" and doc["embedded_chunks"] == 0
    shown = json.loads(runner.invoke(app, ["docs", "show", "--json", str(doc["id"])]).output)
    assert shown["search"] == "keyword" and shown["embedded_chunks"] == 0 and shown["content"].startswith("# Alpha")
    table = runner.invoke(app, ["docs", "list"])
    assert f"0/{doc['chunk_count']}" in table.output
    indexed = runner.invoke(app, ["docs", "index"])
    assert indexed.exit_code == 0 and "embedded" in indexed.output
    [doc] = _listed(runner, app)
    assert doc["search"] == "hybrid" and doc["embedded_chunks"] == doc["chunk_count"]
    assert "every chunk has its vector" in runner.invoke(app, ["docs", "index"]).output


def test_ctrl_c_while_embedding_leaves_the_rest_pending_and_exits_130(
        app: typer.Typer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from saber.cli import knowledge as knowledge_cli

    def interrupted(*args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(knowledge_cli, "_fill_pass", interrupted)
    (tmp_path / "a.md").write_text("# Alpha\n\n" + "Alpha is the first letter. " * 40, encoding="utf-8")
    runner = CliRunner()
    result = runner.invoke(app, ["ingest", str(tmp_path / "a.md")])
    assert isinstance(result.exception, Interrupted), result.output  # saber's main prints it, exit 130
    said = result.exception.line()
    assert said.startswith("saber: interrupted: ") and "still without vectors" in said and "saber docs index" in said
    [doc] = _listed(runner, app)
    assert doc["search"] == "keyword"


class RefusingEmbedder(HashingEmbedder):
    """An embedder whose endpoint refuses every batch, as one with a wrong key does."""

    def embed_documents(self, texts: object) -> object:
        from saber.rag.documents import EmbeddingError

        raise EmbeddingError("embedder test at http://127.0.0.1:9/v1/embeddings answered 401: bad key")


def test_a_failing_embedder_ends_ingest_and_index_with_one_error_and_docs_say_why(tmp_path: Path) -> None:
    import json

    db = tmp_path / "saber.db"
    set_engine_factory(lambda: RagEngine(SQLiteStore(db), RefusingEmbedder(256)))
    main = typer.Typer()
    main.command("ingest")(ingest_command)
    main.add_typer(docs_app, name="docs")
    (tmp_path / "a.md").write_text("# Alpha\n\nAlpha is the first letter.", encoding="utf-8")
    runner = CliRunner()
    reason = "embedder test at http://127.0.0.1:9/v1/embeddings answered 401: bad key"
    try:
        ingested = runner.invoke(main, ["ingest", str(tmp_path / "a.md")])
        assert isinstance(ingested.exception, CLIError) and ingested.exception.code == 1
        assert str(ingested.exception).startswith(f"a.md is keyword-searchable, but its vectors could not be "
                                                  f"computed: {reason}; 1 chunk(s) stay keyword-searchable only")
        [doc] = _listed(runner, main)
        assert doc["search"] == "keyword" and doc["vectors"]["state"] == "failing"  # type: ignore[index]
        assert doc["vectors"]["error"] == reason  # type: ignore[index]
        shown = json.loads(runner.invoke(main, ["docs", "show", "--json", str(doc["id"])]).output)
        assert shown["vectors"]["error"] == reason
        indexed = runner.invoke(main, ["docs", "index"])
        assert isinstance(indexed.exception, CLIError) and indexed.exception.code == 1
        assert str(indexed.exception).startswith(f"vectors could not be computed: {reason};")
    finally:
        set_engine_factory(None)
    set_engine_factory(lambda: RagEngine(SQLiteStore(db), HashingEmbedder(256)))
    try:
        assert runner.invoke(main, ["docs", "index"]).exit_code == 0
        [doc] = _listed(runner, main)
        assert doc["search"] == "hybrid" and doc["vectors"] is None
    finally:
        set_engine_factory(None)


def test_a_users_document_shows_the_sha256_of_its_text(app: typer.Typer, tmp_path: Path) -> None:
    import json

    from saber.rag.documents import content_hash

    engine = RagEngine(SQLiteStore(tmp_path / "saber.db"), HashingEmbedder(256))
    text = "# Rota\n\nThe zebras are fed at seven."
    for owner in ("alice", "bob"):
        engine.ingest_text("Rota", text, source=f"upload:{owner}/rota.md", owner=owner)
    engine.close()
    runner = CliRunner()
    listed = _listed(runner, app)
    assert len(listed) == 2 and {d["content_hash"] for d in listed} == {content_hash(text)}
    shown = json.loads(runner.invoke(app, ["docs", "show", "--json", str(listed[0]["id"])]).output)
    assert shown["content_hash"] == content_hash(text)
