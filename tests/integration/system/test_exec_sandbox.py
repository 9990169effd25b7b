"""exec_command in bubblewrap: every escape attempt is refused or contained."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from saber.config import Settings
from saber.graph import GraphConfig, GraphRuntime, Node, NodeStatus, TaskGraph
from saber.tools.base import Tool
from saber.tools.system import system_tools
from saber.tools.system.sandbox import sandbox_uid

pytestmark = pytest.mark.slow

if shutil.which("bwrap") is None:
    pytest.fail("bubblewrap is not installed: .ci/run installs Debian's bubblewrap", pytrace=False)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def exists(path: str) -> bool:
    return Path(path).exists()


def running_commands() -> str:
    return subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=True).stdout


def exec_for(home: Path, **settings: Any) -> Tool:
    got = system_tools(Settings(home=home, **{**settings, "exec": {"enabled": True, **settings.get("exec", {})}}))
    tools = {t.name: t for t in got.tools}
    assert "exec_command" in tools, got.notes
    return tools["exec_command"]


async def test_runs_a_command_in_the_workspace(home: Path) -> None:
    tool = exec_for(home)
    (home / "workspace" / "data.txt").write_text("3\n1\n2\n", encoding="utf-8")
    out = await tool.run({"command": "sort data.txt"})
    assert out == {"exit_code": 0, "stdout": "1\n2\n3\n", "stderr": ""}
    out = await tool.run({"command": "python3 -c 'import os; print(os.getcwd())'"})
    assert out["stdout"] == "/workspace\n"


async def test_a_string_is_never_passed_to_a_shell(home: Path) -> None:
    tool = exec_for(home)
    out = await tool.run({"command": "echo $HOME; echo `id`"})
    assert out["stdout"] == "$HOME; echo `id`\n"


async def test_writes_outside_the_workspace_fail_and_inside_persist(home: Path) -> None:
    tool = exec_for(home)
    out = await tool.run({"command": "sh -c 'echo kept > /workspace/k.txt; echo gone > /tmp/t.txt; touch /usr/evil /etc/evil'"})
    assert (home / "workspace" / "k.txt").read_text() == "kept\n"
    assert "evil" in out["stderr"]
    assert not exists("/usr/evil") and not exists("/etc/evil")


async def test_cannot_read_root_or_the_saber_database(home: Path) -> None:
    tool = exec_for(home)
    (home / "saber.db").write_bytes(b"SQLite format 3\x00 secret rows")
    out = await tool.run({"command": f"cat {home / 'saber.db'}"})
    assert out["exit_code"] != 0 and "secret rows" not in out["stdout"]
    out = await tool.run({"command": "ls /root"})
    assert out["exit_code"] != 0
    out = await tool.run({"command": "cat /etc/shadow"})
    assert out["exit_code"] != 0 and out["stdout"] == ""


async def test_no_network(home: Path) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    try:
        tool = exec_for(home)
        code = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=3); print('connected')"
        out = await tool.run({"command": ["python3", "-c", code]})
        assert "connected" not in out["stdout"] and out["exit_code"] != 0
    finally:
        listener.close()


async def test_a_process_bomb_hits_the_process_limit(home: Path) -> None:
    tool = exec_for(home, exec={"max_processes": 16, "timeout": 20})
    bomb = "import os\nfor i in range(200):\n    try:\n        os.fork() or os.pause()\n    except OSError as e:\n        print('limit', i); break"
    started = time.monotonic()
    out = await tool.run({"command": ["python3", "-c", bomb]})
    assert "limit" in out["stdout"], out
    assert time.monotonic() - started < 20


async def test_a_hundred_megabytes_of_output_is_cut_and_says_so(home: Path) -> None:
    tool = exec_for(home, exec={"max_output_bytes": 4096})
    out = await tool.run({"command": "python3 -c 'import sys; sys.stdout.write(\"x\" * 100_000_000)'"})
    assert len(out["stdout"]) <= 4096
    assert "output over 4,096 bytes" in out["note"]


async def test_sleeping_past_the_timeout_is_stopped(home: Path) -> None:
    tool = exec_for(home, exec={"timeout": 1.0})
    started = time.monotonic()
    out = await tool.run({"command": "sleep 30"})
    assert out["note"].startswith("timed out after 1 s")
    assert time.monotonic() - started < 10


@pytest.mark.parametrize("sandbox", ["bwrap", "none"])
async def test_a_background_child_does_not_outlive_the_command(home: Path, sandbox: str) -> None:
    """The command ends when its own process does, not when the child left holding its output does
    (unconfined, that was at the time limit, reported as a timeout), and the child ends with it."""
    tool = exec_for(home, exec={"sandbox": sandbox})
    marker = f"{os.getpid()}.{uuid.uuid4().int % 10**9}"  # this run's own: ps lists every process of the host
    out = await tool.run({"command": ["sh", "-c", f"sleep {marker} & echo started"]})
    assert out == {"exit_code": 0, "stdout": "started\n", "stderr": ""}
    assert f"sleep {marker}" not in running_commands()


async def test_memory_and_cpu_limits(home: Path) -> None:
    tool = exec_for(home, exec={"memory_mb": 256, "cpu_seconds": 1, "timeout": 20})
    out = await tool.run({"command": ["python3", "-c", "x = bytearray(1024 * 1024 * 1024)"]})
    assert "MemoryError" in out["stderr"]
    out = await tool.run({"command": ["python3", "-c", "while True: pass"]})
    assert out["exit_code"] != 0 and "timed out" not in out.get("note", "")


def test_the_allow_list_decides_what_asks_first(home: Path) -> None:
    tool = exec_for(home)
    assert tool.approval_reason({"command": "ls -la"}) is None
    assert tool.approval_reason({"command": "find . -name '*.txt'"}) is None
    assert tool.approval_reason({"command": "find . -delete"}) == "find with -delete: it may write, delete or run a program"
    assert tool.approval_reason({"command": "python3 -c 'print(1)'"}) == "python3 is not on the allow-list"
    assert tool.approval_reason({"command": "python3 script.py"}) == "python3 is not on the allow-list"
    assert tool.approval_reason({"command": "rm -rf /workspace"}) == "rm is not on the allow-list"
    shell = exec_for(home, exec={"shell": True})
    assert shell.approval_reason({"command": "ls"}) == "shell commands always need approval"


async def test_a_read_only_workspace(home: Path) -> None:
    tool = exec_for(home, exec={"workspace_write": False})
    out = await tool.run({"command": "sh -c 'echo x > /workspace/x.txt'"})
    assert out["exit_code"] != 0 and not (home / "workspace" / "x.txt").exists()


async def test_no_user_namespace_can_be_made_inside(home: Path) -> None:
    """In a user namespace of its own the command would be root again (mounts, remapped files)."""
    tool = exec_for(home)
    out = await tool.run({"command": "unshare --user --map-root-user id -u"})
    assert out["exit_code"] != 0 and out["stdout"] == "", out
    out = await tool.run({"command": ["python3", "-c", "import os; os.unshare(os.CLONE_NEWUSER); print('made')"]})
    assert out["exit_code"] != 0 and "made" not in out["stdout"], out
    out = await tool.run({"command": "id -u"})
    assert out["stdout"] == f"{sandbox_uid()}\n" and out["exit_code"] == 0


async def test_an_allowed_name_runs_the_system_binary_not_a_workspace_file(home: Path) -> None:
    tool = exec_for(home)
    planted = home / "workspace" / "ls"
    planted.write_text("#!/bin/sh\necho planted ran\n", encoding="utf-8")
    planted.chmod(0o755)
    assert tool.approval_reason({"command": "ls"}) is None
    out = await tool.run({"command": "ls"})
    assert out["exit_code"] == 0 and "planted ran" not in out["stdout"] and "ls" in out["stdout"].split()
    assert tool.approval_reason({"command": "./ls"}) == "./ls is a file in the workspace, not a program of the system"


async def test_a_timed_out_command_runs_once_and_reports_its_own_timeout(home: Path) -> None:
    """exec.timeout equal to the graph's step timeout (as by default): the command's own limit
    fires first, and the command is not run again."""
    tool = exec_for(home, exec={"timeout": 1.0})
    command = ["sh", "-c", "echo ran >> runs.txt; sleep 30"]
    graph = TaskGraph([Node(id="n1", tool="exec_command", params={"command": command})])
    result = await GraphRuntime(graph, {"exec_command": tool}, GraphConfig(step_timeout=1.0, retry_delay=0.0)).run()
    node = result.nodes["n1"]
    assert (home / "workspace" / "runs.txt").read_text(encoding="utf-8") == "ran\n"
    assert node.status is NodeStatus.DONE and node.attempts == 1
    assert node.result["note"] == "timed out after 1 s: the command was stopped"


def tools_on(bin_dir: Path, monkeypatch: pytest.MonkeyPatch, *, real: tuple[str, ...], fake_bwrap: str | None = None) -> None:
    """PATH is ``bin_dir`` alone, holding the ``real`` tools and, when given, a fake bwrap script."""
    bin_dir.mkdir(exist_ok=True)
    for name in real:
        found = shutil.which(name)
        assert found is not None
        (bin_dir / name).symlink_to(found)
    if fake_bwrap is not None:
        (bin_dir / "bwrap").write_text(fake_bwrap, encoding="utf-8")
        (bin_dir / "bwrap").chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))


def unavailable(home: Path) -> list[str]:
    got = system_tools(Settings(home=home, exec={"enabled": True}))
    assert "exec_command" not in [t.name for t in got.tools]
    return [n.removeprefix("exec_command is not available: ") for n in got.notes if "not available" in n]


AFTER = " (it never runs unconfined unless exec.sandbox = \"none\")"
LONG = "x" * 300
"""A bubblewrap's error longer than a note shows (200 characters)."""


def test_a_bubblewrap_without_disable_userns_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """bubblewrap before 0.8 cannot stop user namespaces: exec_command is then not registered."""
    said = f"bwrap: Unknown option --disable-userns {LONG}"
    tools_on(tmp_path / "bin", monkeypatch, real=("prlimit", "setpriv"),
             fake_bwrap=f"#!/bin/sh\necho '{said}' >&2\nexit 1\n")
    assert unavailable(tmp_path / "home") == [
        "bubblewrap is too old: 0.8 or later is needed to keep commands from making user namespaces "
        f"(--disable-userns): {said[:200]}" + AFTER]


@pytest.mark.parametrize(("real", "fake", "problem"), [
    ((), None, "bubblewrap (bwrap) is not installed"),
    (("bwrap",), None, "prlimit (util-linux) is not installed"),
    (("bwrap", "prlimit"), None, "setpriv (util-linux) is not installed"),
    (("prlimit", "setpriv"), f"#!/bin/sh\nprintf 'bwrap: No permissions to create new namespace \\377 {LONG}' >&2\nexit 1\n",
     "bubblewrap cannot create a sandbox here: " + f"bwrap: No permissions to create new namespace \ufffd {LONG}"[:200]),
])
def test_a_system_that_cannot_confine_the_command_is_said_and_never_runs_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, real: tuple[str, ...], fake: str | None, problem: str
) -> None:
    tools_on(tmp_path / "bin", monkeypatch, real=real, fake_bwrap=fake)
    assert unavailable(tmp_path / "home") == [problem + AFTER]


def test_a_bubblewrap_that_cannot_start_is_said(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tools_on(tmp_path / "bin", monkeypatch, real=("prlimit", "setpriv"), fake_bwrap="#!/no/such/interpreter\n")
    [problem] = unavailable(tmp_path / "home")
    assert problem.startswith("bubblewrap cannot run: [Errno 2] No such file or directory"), problem


async def test_an_unconfined_command_without_prlimit_is_refused_with_the_reason(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Unconfined, the limits are all a command has: without prlimit it does not run at all."""
    tool = exec_for(home, exec={"sandbox": "none"})
    tools_on(tmp_path / "bin", monkeypatch, real=("touch",))
    with pytest.raises(RuntimeError) as raised:
        await tool.run({"command": ["touch", "ran"]})
    assert str(raised.value) == "prlimit is not installed"
    assert not (home / "workspace" / "ran").exists()


def test_an_allow_list_word_that_is_no_system_program_is_said(home: Path) -> None:
    (home / "workspace").mkdir(parents=True)
    got = system_tools(Settings(home=home, exec={"enabled": True, "allow": ["ls", "no-such-program", "./ls"]}))
    assert [n for n in got.notes if n.startswith("exec.allow")] == [
        "exec.allow: no-such-program: no such program on /usr/local/bin:/usr/bin:/bin (it asks for approval)",
        "exec.allow: ./ls: a relative path; name a program, or give its absolute path (it asks for approval)"]
