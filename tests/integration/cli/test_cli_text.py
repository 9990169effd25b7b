"""The saber command as a user runs it (a real process): text shown exactly as it is, ids by unique
prefix, errors as one line on stderr with documented exit codes, stdin queries, interrupted tasks."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_signals import sigint_as_in_a_terminal

pytestmark = pytest.mark.slow

MARKUP = "Plan [red]Q3[/red] budget [/] [bold]x[/bold] :smile:"
SOURCE = (f"# {MARKUP}\n\nThe [bold]budget[/bold] for Q3 is 42 [/] units; [link=http://x]y[/link] \\[z].  \n"
          "A hard break above (two trailing spaces).\n\n## 附录 [/]\n\n复兴号 [red]350[/red] 公里。\n\n"
          "```python\ndef f():\n    pass\n\n\n\ndef g():\n    pass\n```\n")


def env_for(home: Path, **extra: str) -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SABER_")}
    environ.update({"SABER_HOME": str(home), "SABER_SEARCH_BACKEND": "none",
                    "SABER_WEATHER_FORECAST_URL": "http://127.0.0.1:9/v1/forecast",
                    "SABER_WEATHER_GEOCODING_URL": "http://127.0.0.1:9/v1/search", **extra})
    return environ


def saber(*args: str, home: Path, stdin: str | None = None, cwd: Path | None = None,
          **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "saber.cli", *args], env=env_for(home, **extra), input=stdin,
                          capture_output=True, text=True, timeout=300, cwd=cwd)


def error_line(done: subprocess.CompletedProcess[str]) -> str:
    """The one ``saber: error:`` line on stderr (and nothing on stdout, no traceback)."""
    lines = [line for line in done.stderr.splitlines() if line.startswith("saber: error:")]
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    return lines[0]


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, str]]:
    """A home with one ingested document whose title and text are full of markup-like brackets."""
    root = tmp_path_factory.mktemp("cli-text")
    home = root / "home"
    source = root / "plan.md"
    source.write_text(SOURCE, encoding="utf-8")
    done = saber("ingest", str(source), home=home)
    assert done.returncode == 0, done.stderr
    listed = saber("docs", "list", "--json", home=home)
    (doc,) = json.loads(listed.stdout)
    yield home, source, doc["id"]


def test_markup_like_text_through_docs_commands(kb: tuple[Path, Path, str]) -> None:
    home, source, doc_id = kb
    listed = saber("docs", "list", "--json", home=home)
    assert json.loads(listed.stdout)[0]["title"] == MARKUP and json.loads(listed.stdout)[0]["id"] == doc_id
    table = saber("docs", "list", home=home, COLUMNS="200")
    assert table.returncode == 0 and "Traceback" not in table.stderr
    assert MARKUP in table.stdout and doc_id[:8] in table.stdout
    shown = saber("docs", "show", doc_id[:5], home=home)  # a unique prefix; stdout is a pipe: the exact text
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout == source.read_text(encoding="utf-8")


def test_markup_like_text_through_ask_and_tasks(kb: tuple[Path, Path, str]) -> None:
    home, _, _ = kb
    rag = saber("ask", "Plan [red]Q3[/red] budget [/] 复兴号", "--rag", home=home)
    assert rag.returncode == 0, rag.stderr
    assert MARKUP in rag.stdout and "复兴号 [red]350[/red] 公里。" in rag.stdout
    assert "'Plan [red]Q3[/red] budget [/] 复兴号'" in rag.stderr  # the progress line, escaped
    react = saber("ask", "Research [/] topic and write a report", home=home)
    assert react.returncode == 0, react.stderr
    assert "Traceback" not in react.stderr and "aclose" not in react.stderr and "[/]" in react.stdout
    tasks = saber("tasks", "--all", home=home, COLUMNS="200")
    assert tasks.returncode == 0 and "Research [/] topic and write a report" in tasks.stdout
    assert " of 3" in tasks.stdout  # research finds nothing relevant here: its steps are counted as they ended
    config = saber("config", home=home, SABER_LLM_BASE_URL="http://x/[red]v1[/red]")
    assert config.returncode == 0 and '"http://x/[red]v1[/red]"' in config.stdout
    bad = saber("config", home=home, SABER_LLM_BASE_URL="http://[red]x[/red]/v1")
    assert bad.returncode == 2 and "is not an http:// or https:// URL" in error_line(bad)


def test_query_from_stdin(tmp_path: Path) -> None:
    done = saber("ask", "-", "--json", home=tmp_path, stdin="东京现在几点 [/]\n")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert events[0]["data"]["query"] == "东京现在几点 [/]"
    assert events[2]["data"]["params"] == {"timezone": "东京"}
    empty = saber("ask", "-", home=tmp_path, stdin="")
    assert empty.returncode == 2 and "query must not be empty" in error_line(empty)


def test_errors_are_one_line_on_stderr(tmp_path: Path) -> None:
    done = saber("docs", "show", "nope", home=tmp_path)
    assert done.returncode == 1 and error_line(done) == "saber: error: no document with id 'nope'"
    done = saber("docs", "rm", "nope", home=tmp_path)
    assert done.returncode == 1 and not done.stdout and error_line(done) == "saber: error: no document with id 'nope'"
    done = saber("docs", "rm", "", home=tmp_path)
    assert done.returncode == 2 and error_line(done) == "saber: error: empty document id"
    (tmp_path / "here.md").write_text("# Here\n\nA file in the current folder.\n", encoding="utf-8")
    done = saber("ingest", "", home=tmp_path, cwd=tmp_path)
    assert done.returncode == 2 and "empty path" in error_line(done) and "added" not in done.stdout
    done = saber("ingest", str(tmp_path / "nonexistent"), home=tmp_path)
    assert done.returncode == 2 and "no such file or folder" in error_line(done)
    home_file = tmp_path / "a-file"
    home_file.write_text("x", encoding="utf-8")
    done = saber("tools", home=home_file)
    assert done.returncode == 2 and "not a folder" in error_line(done) and "Errno" not in done.stderr
    done = saber("docs", "list", home=home_file)
    assert done.returncode == 2 and "not a folder" in error_line(done) and "Errno" not in done.stderr
    (tmp_path / "bad.docx").write_bytes(b"not a zip at all")
    done = saber("ingest", str(tmp_path / "bad.docx"), home=tmp_path / "h")
    assert done.returncode == 1 and "bad.docx: not a valid .docx file" in done.stderr and "Package not found" not in done.stderr
    done = saber("ask", "x", "--mode", "fast", home=tmp_path)
    assert done.returncode == 2 and "unknown mode 'fast'" in error_line(done)


def test_bare_saber_help_and_version(tmp_path: Path) -> None:
    bare = saber(home=tmp_path)
    assert bare.returncode == 0 and "Commands:" in bare.stdout and bare.stderr == ""
    version = saber("--version", home=tmp_path)
    assert version.returncode == 0 and version.stdout.startswith("saber 0.")
    helped = saber("ask", "--help", home=tmp_path)
    assert helped.returncode == 0 and "<str>" not in helped.stdout and "<bool>" not in helped.stdout


def test_config_names_each_source(tmp_path: Path) -> None:
    (tmp_path / "saber.toml").write_text("[graph]\nmax_parallel = 3\n", encoding="utf-8")
    done = saber("config", "--json", home=tmp_path, SABER_LLM_TIMEOUT="7")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["sources"]["graph.max_parallel"] == "file" and data["settings"]["graph"]["max_parallel"] == 3
    assert data["sources"]["llm.timeout"] == "env" and data["sources"]["llm.temperature"] == "default"
    text = saber("config", home=tmp_path, SABER_LLM_TIMEOUT="7").stdout
    assert "[graph]\nmax_parallel = 3  (file)" in text and "[llm]\n" in text and "\ntimeout = 7.0  (env)" in text
    blank = json.loads(saber("config", "--json", home=tmp_path, SABER_SERVER_ADMINS=" ", saber_llm_model="m").stdout)
    assert blank["sources"]["server.admins"] == "default" and blank["settings"]["server"]["admins"] == []
    assert blank["sources"]["llm.model"] == "env" and blank["settings"]["llm"]["model"] == "m"


# codemod_settings: off (this test spells settings the old way on purpose)
def test_config_says_when_a_setting_is_spelled_the_old_way(tmp_path: Path) -> None:
    (tmp_path / "saber.toml").write_text("graph_max_parallel = 3\n", encoding="utf-8")
    done = saber("config", "--json", home=tmp_path, SABER_TOOL_TIMEOUT="7")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["settings"]["graph"]["max_parallel"] == 3 and data["sources"]["tools.timeout"] == "env"
    assert "graph_max_parallel is deprecated: write [graph] max_parallel" in done.stderr
    assert "SABER_TOOL_TIMEOUT is deprecated: use SABER_TOOLS_TIMEOUT" in done.stderr
# codemod_settings: on


def _stalled_server() -> socket.socket:
    """Accepts connections and never answers: a weather service that hangs."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    return server


def _start_react_task(home: Path, url: str) -> tuple[subprocess.Popen[str], str]:
    """A rule-planned react task whose weather step hangs; returns once that step has started."""
    proc = subprocess.Popen([sys.executable, "-m", "saber.cli", "ask", "现在几点，北京天气怎么样", "--json"],
                            env=env_for(home, SABER_WEATHER_GEOCODING_URL=url, SABER_WEATHER_FORECAST_URL=url,
                                        SABER_GRAPH_STEP_TIMEOUT="120", SABER_GRAPH_CHECKPOINT_LEASE="2"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=sigint_as_in_a_terminal)
    assert proc.stdout is not None
    task_id = ""
    for raw in proc.stdout:
        event = json.loads(raw)
        if event["type"] == "start":
            task_id = event["data"]["task_id"]
        if event["type"] == "node_start" and event["data"]["tool"] == "get_weather":
            break
    return proc, task_id


def test_ctrl_c_names_the_resume_command_and_resume_takes_a_prefix(tmp_path: Path) -> None:
    with _stalled_server() as stalled:
        url = f"http://127.0.0.1:{stalled.getsockname()[1]}/v1/search"
        proc, task_id = _start_react_task(tmp_path, url)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert f"saber: interrupted — continue with `saber resume {task_id}`" in stderr and "Traceback" not in stderr
    listed = json.loads(saber("tasks", "--json", home=tmp_path).stdout)
    assert [t["task_id"] for t in listed] == [task_id]
    resumed = saber("resume", task_id[:6], home=tmp_path)  # the weather service now refuses: the step fails
    assert "Traceback" not in resumed.stderr
    (task,) = json.loads(saber("tasks", "--all", "--json", home=tmp_path).stdout)
    assert task["status"] == "failed" and task["done"] == 1 and task["failed"] == 1 and task["finished"] == 2
    table = saber("tasks", "--all", home=tmp_path, COLUMNS="200").stdout
    assert "1 done, 1 failed of 2" in table


def test_ctrl_c_in_a_command_that_does_not_catch_it_still_says_interrupted(tmp_path: Path) -> None:
    """typer turns an uncaught Ctrl-C into a silent exit 130; saber says so on stderr."""
    import time

    big = tmp_path / "big.md"
    big.write_text("\n\n".join(f"Paragraph {i} about harbour crane {i} and its berth {i % 97}." for i in range(60000)),
                   encoding="utf-8")
    home = tmp_path / "home"
    home.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "saber.cli", "ingest", str(big)], preexec_fn=sigint_as_in_a_terminal, env=env_for(home),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not (home / "saber.db").exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)  # the command has started (its imports are done) once it opened the database
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    # 130, or ended by the SIGINT itself, which a shell reports as 130 too: about one run in ten, when
    # the signal lands as the store is first opened, the process says "interrupted" and then ends by
    # the signal (not understood yet; noted in the session's closing note)
    assert proc.returncode in (130, -signal.SIGINT), stderr
    assert stderr.startswith("saber: interrupted") and "Traceback" not in stderr, stderr


def test_a_killed_task_is_listed_as_interrupted(tmp_path: Path) -> None:
    with _stalled_server() as stalled:
        url = f"http://127.0.0.1:{stalled.getsockname()[1]}/v1/search"
        proc, task_id = _start_react_task(tmp_path, url)
        proc.kill()
        proc.communicate(timeout=60)
    (task,) = json.loads(saber("tasks", "--json", home=tmp_path).stdout)
    assert task["task_id"] == task_id and task["status"] == "running" and task["state"] == "interrupted"
    table = saber("tasks", home=tmp_path, COLUMNS="200").stdout
    assert "interrupted" in table and "running" not in table


@pytest.mark.parametrize("args", [("ask", "What time is it in New York?"), ("ask", "hello", "--json")])
def test_a_reader_that_leaves_early_gets_no_traceback(tmp_path: Path, args: tuple[str, ...]) -> None:
    """``saber ask … | head -1``: the pipe closes after the first line."""
    with subprocess.Popen([sys.executable, "-m", "saber.cli", *args], env=env_for(tmp_path), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        first = proc.stdout.readline()
        proc.stdout.close()
        err = proc.stderr.read()
        assert proc.wait(timeout=120) in (0, 1) and first.strip()
    assert "Traceback" not in err and "asynchronous generator" not in err and "ERROR" not in err, err


def test_a_command_group_alone_shows_its_help(tmp_path: Path) -> None:
    done = saber("docs", home=tmp_path)
    assert done.returncode == 2 and done.stderr.startswith("Usage: ") and " docs [OPTIONS] COMMAND [ARGS]...\n" in done.stderr
    assert "\n  list " in done.stderr and "saber: error" not in done.stderr
