"""``saber ingest`` and ``saber docs`` as a user runs them when the embeddings endpoint refuses the
key or is down: one ``saber: error:`` line naming the embedder and exit code 1 (never a traceback
or a hang), the file keyword-searchable anyway, and ``docs list``/``show`` saying why its vectors
are pending. The endpoint is a FakeOpenAIServer on loopback that checks the key."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from test_cli import one_line_error, saber

from saber.testing import FakeOpenAIServer

pytestmark = pytest.mark.slow

WRONG_KEY = "sk-wrong-key-0123456789"
NOTES = "# Cache\n\nCache-Control max-age sets how long a response stays fresh.\n"


def embedding_env(base_url: str, key: str, **more: str) -> dict[str, str]:
    return {"SABER_EMBEDDING_PROVIDER": "openai", "SABER_EMBEDDING_BASE_URL": base_url,
            "SABER_EMBEDDING_MODEL": "text-embedding-3-small", "SABER_EMBEDDING_API_KEY": key, **more}


def listed(home: Path, env: dict[str, str]) -> list[dict[str, object]]:
    done = saber("docs", "list", "--json", home=home, **env)
    assert done.returncode == 0, done.stderr
    docs: list[dict[str, object]] = json.loads(done.stdout)
    return docs


def no_key(*runs: subprocess.CompletedProcess[str]) -> None:
    for run in runs:
        assert WRONG_KEY not in run.stdout + run.stderr and "Traceback" not in run.stderr


def test_a_refused_key_ends_ingest_and_index_in_one_line_and_docs_say_why_vectors_are_pending(tmp_path: Path) -> None:
    notes = tmp_path / "notes.md"
    notes.write_text(NOTES, encoding="utf-8")
    home = tmp_path / "home"
    with FakeOpenAIServer(embedding_dimensions=16, api_key="sk-right") as embeddings:
        env = embedding_env(embeddings.base_url, WRONG_KEY, SABER_EMBEDDING_DIM="16")
        reason = (f"embedder openai:text-embedding-3-small at {embeddings.base_url}/embeddings answered 401: "
                  "Incorrect API key provided (check embedding.api_key)")
        ingest = saber("ingest", str(notes), home=home, **env)
        assert ingest.returncode == 1
        assert "1 added" in ingest.stdout and "searchable by keyword after" in ingest.stdout
        assert one_line_error(ingest) == (
            f"saber: error: notes.md is keyword-searchable, but its vectors could not be computed: {reason}; "
            "1 chunk(s) stay keyword-searchable only, until `saber docs index` (or a running `saber serve`) "
            "embeds them once the embedder works")

        [doc] = listed(home, env)
        assert doc["search"] == "keyword" and doc["embedded_chunks"] == 0
        assert doc["vectors"] == {"state": "failing", "error": reason, "retry_in_s": None,
                                  "failed_at": doc["vectors"]["failed_at"]}  # type: ignore[index]
        table = saber("docs", "list", home=home, **env)
        assert table.returncode == 0 and "0/1 failing" in table.stdout
        note = "1 document(s) wait for vectors (keyword search finds them meanwhile); the last attempt to embed them failed at "
        assert note in table.stderr and table.stderr.rstrip().endswith(reason)
        shown = saber("docs", "show", "--json", str(doc["id"]), home=home, **env)
        assert shown.returncode == 0 and json.loads(shown.stdout)["vectors"]["error"] == reason

        index = saber("docs", "index", home=home, **env)
        assert index.returncode == 1
        assert one_line_error(index) == (
            f"saber: error: vectors could not be computed: {reason}; 1 chunk(s) stay keyword-searchable only, "
            "until `saber docs index` (or a running `saber serve`) embeds them once the embedder works")
        no_key(ingest, table, shown, index)

        fixed = embedding_env(embeddings.base_url, "sk-right", SABER_EMBEDDING_DIM="16")
        index = saber("docs", "index", home=home, **fixed)
        assert index.returncode == 0 and "1 chunk(s) embedded" in index.stdout, index.stderr
        [doc] = listed(home, fixed)
        assert doc["search"] == "hybrid" and doc["vectors"] is None


def test_an_endpoint_that_is_down_fails_the_vectors_or_without_a_known_size_the_ingest(
        tmp_path: Path, refused_url: str) -> None:
    notes = tmp_path / "notes.md"
    notes.write_text(NOTES, encoding="utf-8")
    unsized = saber("ingest", str(notes), home=tmp_path / "a", **embedding_env(f"{refused_url}/v1", WRONG_KEY))
    assert unsized.returncode == 1
    assert one_line_error(unsized) == "saber: error: 1 of 1 file(s) could not be ingested (see above)"
    assert (f"✗ embedder openai:text-embedding-3-small at {refused_url}/v1/embeddings unreachable: connection "
            "refused (asking its vector size; set embedding_dim to store documents keyword-searchable while the "
            "endpoint is down)") in unsized.stderr

    env = embedding_env(f"{refused_url}/v1", WRONG_KEY, SABER_EMBEDDING_DIM="16")
    sized = saber("ingest", str(notes), home=tmp_path / "b", **env)
    assert sized.returncode == 1 and "1 added" in sized.stdout
    assert one_line_error(sized) == (
        f"saber: error: notes.md is keyword-searchable, but its vectors could not be computed: embedder "
        f"openai:text-embedding-3-small at {refused_url}/v1/embeddings unreachable: connection refused; 1 chunk(s) "
        "stay keyword-searchable only, until `saber docs index` (or a running `saber serve`) embeds them once the "
        "embedder works")
    [doc] = listed(tmp_path / "b", env)
    assert doc["search"] == "keyword" and "connection refused" in doc["vectors"]["error"]  # type: ignore[index]
    no_key(unsized, sized)
