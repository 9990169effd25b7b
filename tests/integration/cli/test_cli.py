"""The saber command as a user runs it: a real process, its exit codes and what it prints."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_signals import sigint_as_in_a_terminal


def saber(*args: str, home: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SABER_")}
    environ.update({"SABER_HOME": str(home), "SABER_SEARCH_BACKEND": "none",
                    "SABER_WEATHER_FORECAST_URL": "http://127.0.0.1:9/v1/forecast",
                    "SABER_WEATHER_GEOCODING_URL": "http://127.0.0.1:9/v1/search", **env})
    return subprocess.run([sys.executable, "-m", "saber.cli", *args], env=environ, capture_output=True, text=True, timeout=300)


def one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    lines = [line for line in done.stderr.splitlines() if line.startswith("saber: error:")]
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr
    return lines[0]


@pytest.mark.slow
def test_unknown_option_and_command(tmp_path: Path) -> None:
    done = saber("ask", "--bogus", "x", home=tmp_path)
    assert done.returncode == 2 and "No such option: --bogus" in one_line_error(done)
    done = saber("frobnicate", home=tmp_path)
    assert done.returncode == 2 and "No such command" in one_line_error(done)


@pytest.mark.slow
def test_invalid_and_unreadable_config(tmp_path: Path) -> None:
    (tmp_path / "saber.toml").write_text("[llm\nmodel=", encoding="utf-8")
    done = saber("config", home=tmp_path)
    assert done.returncode == 2 and "invalid TOML" in one_line_error(done)
    (tmp_path / "saber.toml").write_bytes(b"\xff\xfe\x00bad")
    done = saber("ask", "hi", home=tmp_path)
    assert done.returncode == 2 and "saber.toml" in one_line_error(done)


@pytest.mark.slow
def test_config_masks_secrets(tmp_path: Path) -> None:
    done = saber("config", "--json", home=tmp_path, SABER_LLM_API_KEY="sk-secret-1234567890-ABCD")
    assert done.returncode == 0
    shown = json.loads(done.stdout)["settings"]
    assert shown["llm"]["api_key"] == "sk-…ABCD" and "sk-secret-1234567890" not in done.stdout


@pytest.mark.slow
def test_tools_lists_parameters(tmp_path: Path) -> None:
    done = saber("tools", "--json", home=tmp_path)
    assert done.returncode == 0, done.stderr
    tools = {t["name"]: t for t in json.loads(done.stdout)}
    assert {"get_time", "get_weather", "search_web", "rag_search", "write_document"} <= set(tools)
    assert tools["get_weather"]["parameters"][0] == {"name": "city", "type": "string", "required": True,
                                                     "description": tools["get_weather"]["parameters"][0]["description"]}


@pytest.mark.slow
def test_model_endpoint_that_refuses(tmp_path: Path) -> None:
    done = saber("ask", "hello", home=tmp_path, SABER_LLM_MODEL="m", SABER_LLM_BASE_URL="http://127.0.0.1:9/v1",
                 SABER_LLM_MAX_RETRIES="0")
    assert done.returncode == 1
    assert "unreachable" in one_line_error(done)


@pytest.mark.slow
def test_ask_json_streams_events(tmp_path: Path) -> None:
    done = saber("ask", "东京现在几点", "--json", home=tmp_path)
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert [e["type"] for e in events] == ["start", "route", "tool_call", "token", "done"]
    assert events[2]["data"]["params"] == {"timezone": "东京"}
    assert "Asia/Tokyo" in events[2]["data"]["tool_result"]
    assert events[-1]["data"]["model"] is None


@pytest.mark.slow
def test_bad_arguments(tmp_path: Path) -> None:
    for args, message in ((("ask", ""), "query must not be empty"), (("ask", "x", "--mode", "fast"), "unknown mode"),
                          (("ask", "x", "--tools", "nope"), "unknown tool: nope")):
        done = saber(*args, home=tmp_path)
        assert done.returncode == 2 and message in one_line_error(done)


@pytest.mark.slow
def test_ingest_docs_and_ask_from_the_knowledge_base(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "rail.md").write_text("# 高铁\n\n复兴号是中国标准动车组，最高运营时速 350 公里。\n", encoding="utf-8")
    (docs / "notes.txt").write_text("HTTP caching: Cache-Control max-age sets the freshness lifetime.\n", encoding="utf-8")
    home = tmp_path / "home"
    done = saber("ingest", str(docs), home=home)
    assert done.returncode == 0, done.stderr
    assert "2 added" in done.stdout
    again = saber("ingest", str(docs / "rail.md"), home=home)
    assert again.returncode == 0 and "1 unchanged" in again.stdout
    listed = saber("docs", "list", home=home)
    assert listed.returncode == 0 and "高铁" in listed.stdout
    answer = saber("ask", "复兴号最高时速是多少", "--json", home=home)
    events = [json.loads(line) for line in answer.stdout.splitlines()]
    assert events[1]["data"]["mode"] == "rag"
    hits = next(e for e in events if e["type"] == "rag_result")["data"]["hits"]
    assert hits[0]["title"] == "高铁"
    assert "350" in events[-1]["data"]["answer"]


@pytest.mark.slow
def test_ingest_and_docs_errors_exit_non_zero(tmp_path: Path) -> None:
    done = saber("ingest", str(tmp_path / "missing.md"), home=tmp_path)
    assert done.returncode == 2 and "no such file or folder" in done.stdout + done.stderr
    (tmp_path / "photo.png").write_bytes(b"\x89PNG")
    done = saber("ingest", str(tmp_path / "photo.png"), home=tmp_path)
    assert done.returncode == 1 and "unsupported file type" in done.stdout + done.stderr
    done = saber("docs", "show", "nope", home=tmp_path)
    assert done.returncode == 1 and "no document with id 'nope'" in done.stdout + done.stderr


@pytest.mark.slow
def test_tasks_and_resume(tmp_path: Path) -> None:
    done = saber("ask", "现在几点，北京天气怎么样", home=tmp_path)
    assert done.returncode == 0, done.stderr
    listed = saber("tasks", "--all", "--json", home=tmp_path)
    assert listed.returncode == 0, listed.stderr
    (task,) = json.loads(listed.stdout)
    assert task["status"] == "failed" and task["query"] == "现在几点，北京天气怎么样" and task["nodes"] == 2
    assert json.loads(saber("tasks", "--json", home=tmp_path).stdout) == []
    again = saber("resume", task["task_id"], home=tmp_path)
    assert again.returncode == 2 and "already finished (failed)" in one_line_error(again)
    unknown = saber("resume", "nope", home=tmp_path)
    assert unknown.returncode == 1 and "no resumable task 'nope'" in one_line_error(unknown)


@pytest.mark.slow
def test_unreachable_database_and_missing_config_are_one_line(tmp_path: Path) -> None:
    done = saber("tools", home=tmp_path, SABER_DATABASE_URL="postgresql://u:secretpw@127.0.0.1:9/db")
    assert done.returncode == 2 and "cannot connect to PostgreSQL" in one_line_error(done)
    assert "secretpw" not in done.stderr
    done = saber("docs", "list", home=tmp_path, SABER_DATABASE_URL="mysql://u:secretpw@127.0.0.1/db")
    assert done.returncode == 2 and not done.stdout
    assert "'mysql://u:***@127.0.0.1/db' is not a PostgreSQL URL" in one_line_error(done)
    done = saber("config", home=tmp_path, SABER_CONFIG=str(tmp_path / "typo.toml"))
    assert done.returncode == 2 and "does not exist" in one_line_error(done)


@pytest.mark.slow
def test_serve_on_a_taken_port_is_one_line_and_never_claims_to_serve(tmp_path: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = saber("serve", "--port", str(port), home=tmp_path)
    assert done.returncode == 1, done.stderr
    assert one_line_error(done) == f"saber: error: cannot listen on 127.0.0.1:{port}: Address already in use"
    assert "serving on" not in done.stderr and "Traceback" not in done.stderr


@pytest.mark.slow
def test_serve_that_cannot_start_never_claims_to_serve(tmp_path: Path) -> None:
    """The address is bound before the app starts: "serving on" waits for the app to be up."""
    done = saber("serve", "--port", "0", home=tmp_path, SABER_DATABASE_URL="postgresql://u@127.0.0.1:9/none")
    assert done.returncode == 2, done.stderr
    assert one_line_error(done).startswith("saber: error: cannot start:")
    assert "serving on" not in done.stderr and "Traceback" not in done.stderr


@pytest.mark.slow
def test_ctrl_c_does_not_wait_for_background_model_calls(tmp_path: Path) -> None:
    import signal
    import socket

    with socket.socket() as stalled:  # accepts connections and never answers: a model endpoint that hangs
        stalled.bind(("127.0.0.1", 0))
        stalled.listen(16)
        url = f"http://127.0.0.1:{stalled.getsockname()[1]}/v1"
        environ = {k: v for k, v in os.environ.items() if not k.startswith("SABER_")}
        environ.update({"SABER_HOME": str(tmp_path), "SABER_LLM_MODEL": "m", "SABER_LLM_BASE_URL": url,
                        "SABER_LLM_TIMEOUT": "120", "SABER_LLM_MAX_RETRIES": "0", "SABER_SEARCH_BACKEND": "none"})
        proc = subprocess.Popen([sys.executable, "-m", "saber.cli", "ask", "你好", "--json"], preexec_fn=sigint_as_in_a_terminal, env=environ,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        for line in proc.stdout:  # the request reached the model call
            if json.loads(line)["type"] == "route":
                break
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)  # the model call would hang for 120 s: waiting on it would fail here
        proc.stdout.close()
        assert proc.stderr is not None
        stderr = proc.stderr.read()
        proc.stderr.close()
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
