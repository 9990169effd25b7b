"""What a command run by exec_command finds around it: the limits configured and no others, its own
namespaces and session, no capabilities and no way to gain one, a scrubbed environment, a private
writable /tmp, the system's files it needs and not the rest; and the output budget, the exit code,
the folder it runs in and the errors that name a wrong command."""

from __future__ import annotations

import asyncio
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

import pytest

from saber.config import Settings
from saber.tools import ToolArgumentError
from saber.tools.base import Tool
from saber.tools.system import system_tools
from saber.tools.system.commands import render
from saber.tools.system.sandbox import NOBODY, Confinement, Limits, Outcome, run_confined, sandbox_uid

pytestmark = pytest.mark.slow

if shutil.which("bwrap") is None:
    pytest.fail("bubblewrap is not installed: .ci/run installs Debian's bubblewrap", pytrace=False)

PROBE = """
import json, os
def status(key):
    for line in open('/proc/self/status'):
        if line.startswith(key + ':'):
            return line.split(':', 1)[1].strip()
limits = {}
for line in open('/proc/self/limits').read().splitlines()[1:]:
    name = line[:26].strip()
    limits[name] = line[26:47].split()[0]
print(json.dumps({
    'env': dict(os.environ),
    'ns': {n: os.readlink('/proc/self/ns/' + n) for n in ('ipc', 'uts', 'net', 'pid', 'mnt', 'cgroup', 'user')},
    'groups': os.getgroups(), 'uid': os.getuid(), 'gid': os.getgid(),
    'cap_bnd': status('CapBnd'), 'cap_inh': status('CapInh'), 'cap_eff': status('CapEff'),
    'no_new_privs': status('NoNewPrivs'),
    'limits': limits,
    'tmp_mode': oct(os.stat('/tmp').st_mode & 0o7777), 'var_tmp_mode': oct(os.stat('/var/tmp').st_mode & 0o7777),
    'cwd': os.getcwd(),
}))
"""


HOST_ETC = {
    name: os.path.exists(f"/etc/{name}")
    for name in ("passwd", "group", "nsswitch.conf", "ld.so.cache", "localtime", "hosts", "resolv.conf")
}
"""The files of /etc the sandbox binds that this host has."""


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def exec_for(home: Path, **settings: Any) -> Tool:
    section = {"enabled": True, **settings.pop("exec", {})}
    got = system_tools(Settings(home=home, exec=section, **settings))
    tools = {t.name: t for t in got.tools}
    assert "exec_command" in tools, got.notes
    return tools["exec_command"]


async def probe(tool: Tool, cwd: str | None = None) -> dict[str, Any]:
    args: dict[str, Any] = {"command": ["python3", "-c", PROBE]}
    if cwd is not None:
        args["cwd"] = cwd
    out = await tool.run(args)
    assert out["exit_code"] == 0, out
    return dict(json.loads(out["stdout"]))


def own_namespace(name: str) -> str:
    return os.readlink(f"/proc/self/ns/{name}")


async def test_the_command_runs_under_exactly_the_limits_configured(home: Path) -> None:
    tool = exec_for(home, exec={"cpu_seconds": 7, "memory_mb": 300, "max_processes": 9})
    before = _processes_of(sandbox_uid())
    seen = await probe(tool)
    after = _processes_of(sandbox_uid())
    limits = seen["limits"]
    assert limits["Max cpu time"] == "7"
    assert limits["Max address space"] == str(300 * 1024 * 1024)
    assert limits["Max file size"] == str(64 * 1024 * 1024)
    assert limits["Max core file size"] == "0"
    # The process limit counts the sandbox user's processes: what it runs already, plus nine (other
    # suites on this machine run sandboxed commands as that user too: its count before and after)
    assert min(before, after) + 9 - 3 <= int(limits["Max processes"]) <= max(before, after) + 9 + 3


def _owner(pid: str) -> int | None:
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return None


async def test_the_command_has_namespaces_and_a_session_of_its_own(home: Path) -> None:
    seen = await probe(exec_for(home))
    for name in ("ipc", "uts", "net", "pid", "mnt", "user"):
        assert seen["ns"][name] != own_namespace(name), name
    with_net = await probe(exec_for(home, exec={"network": True}))
    assert with_net["ns"]["net"] == own_namespace("net")
    assert with_net["ns"]["ipc"] != own_namespace("ipc")


async def test_the_command_is_in_a_new_session_not_the_callers(home: Path) -> None:
    tool = exec_for(home)
    out = await tool.run({"command": ["python3", "-c", "import os; print(os.getsid(0))"]})
    assert out["exit_code"] == 0, out
    assert int(out["stdout"]) != os.getsid(0)


async def test_the_command_runs_as_nobody_with_no_capability_and_no_way_to_gain_one(
    home: Path,
) -> None:
    seen = await probe(exec_for(home))
    if os.geteuid() == 0:
        assert (seen["uid"], seen["gid"], seen["groups"]) == (NOBODY, NOBODY, [])
    else:  # bubblewrap makes the user namespace itself, as the user
        assert seen["uid"] == os.getuid()
    assert int(seen["cap_bnd"], 16) == 0 and int(seen["cap_inh"], 16) == 0 and int(seen["cap_eff"], 16) == 0
    assert seen["no_new_privs"] == "1"


async def test_the_environment_is_scrubbed_to_what_the_sandbox_sets(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SECRET_TOKEN", "do-not-leak")
    seen = await probe(exec_for(home))
    assert seen["env"] == {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": "/workspace",
        "LANG": "C.UTF-8",
        "TMPDIR": "/tmp",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PWD": "/workspace",
    }


async def test_tmp_is_private_and_writable_by_the_command(home: Path) -> None:
    tool = exec_for(home)
    seen = await probe(tool)
    assert seen["tmp_mode"] == "0o1777" and seen["var_tmp_mode"] == "0o1777"
    out = await tool.run(
        {"command": ["sh", "-c", "echo kept > /tmp/t && cat /tmp/t && echo v > /var/tmp/v && cat /var/tmp/v"]}
    )
    assert out == {"exit_code": 0, "stdout": "kept\nv\n", "stderr": ""}
    again = await tool.run({"command": ["sh", "-c", "ls /tmp /var/tmp"]})
    assert again["stdout"].split() == ["/tmp:", "/var/tmp:"]


async def test_the_system_files_a_command_needs_are_there_and_hosts_only_with_the_network(home: Path) -> None:
    tool = exec_for(home)
    out = await tool.run(
        {"command": ["sh", "-c", "id -un; awk 'BEGIN { print 6 * 7 }'; test -e /etc/hosts || echo no-hosts"]}
    )
    name = pwd.getpwuid(sandbox_uid()).pw_name
    assert out == {"exit_code": 0, "stdout": f"{name}\n42\nno-hosts\n", "stderr": ""}
    needed = [f"/etc/{name}" for name in ("passwd", "group", "nsswitch.conf", "ld.so.cache", "ld.so.conf", "ld.so.conf.d",
                                          "alternatives", "localtime", "ssl", "ca-certificates", "mime.types")]
    needed += ["/bin", "/sbin", "/lib", "/lib64", "/lib32", "/usr/bin"]
    here = [path for path in needed if os.path.lexists(path)]  # noqa: ASYNC240 (a stat each, once)
    got = await tool.run({"command": ["sh", "-c", 'for f in "$@"; do test -e "$f" || echo "missing $f"; done', "sh", *here]})
    assert got == {"exit_code": 0, "stdout": "", "stderr": ""}
    networked = exec_for(home, exec={"network": True})
    for name in ("hosts", "resolv.conf"):
        if HOST_ETC[name]:
            got = await networked.run({"command": ["test", "-e", f"/etc/{name}"]})
            assert got["exit_code"] == 0, name
            got = await tool.run({"command": ["test", "-e", f"/etc/{name}"]})
            assert got["exit_code"] == 1, name


async def test_the_command_runs_in_the_folder_asked_for(home: Path) -> None:
    tool = exec_for(home)
    (home / "workspace" / "sub" / "deeper").mkdir(parents=True)
    assert (await probe(tool, cwd="sub/deeper"))["cwd"] == "/workspace/sub/deeper"
    assert (await probe(tool))["cwd"] == "/workspace"


async def test_the_output_budget_is_shared_and_exact(home: Path) -> None:
    tool = exec_for(home, exec={"max_output_bytes": 4096})
    exact = await tool.run({"command": ["python3", "-c", "import sys; sys.stdout.write('x' * 4096)"]})
    assert exact == {"exit_code": 0, "stdout": "x" * 4096, "stderr": ""}
    over = await tool.run({"command": ["python3", "-c", "import sys; sys.stdout.write('x' * 4097)"]})
    assert over["stdout"] == "x" * 4096 and over["note"].startswith("output over 4,096 bytes")
    both = await tool.run(
        {
            "command": [
                "python3",
                "-c",
                "import sys; sys.stdout.write('o' * 3000); sys.stdout.flush(); sys.stderr.write('e' * 3000)",
            ]
        }
    )
    assert len(both["stdout"]) + len(both["stderr"]) == 4096 and both["note"].startswith(
        "output over 4,096 bytes"
    )


async def test_the_exit_code_and_both_streams_come_back(home: Path) -> None:
    tool = exec_for(home)
    out = await tool.run({"command": ["sh", "-c", "echo out; echo err >&2; exit 3"]})
    assert out == {"exit_code": 3, "stdout": "out\n", "stderr": "err\n"}
    missing = await tool.run({"command": "no-such-program-here"})
    assert missing["exit_code"] != 0 and "no-such-program-here" in missing["stderr"]


async def refusal(tool: Tool, args: dict[str, Any]) -> str:
    """The message of the ToolArgumentError the call raises, checked to name exec_command."""
    with pytest.raises(ToolArgumentError) as raised:
        await tool.run(args)
    assert raised.value.tool == "exec_command"
    return str(raised.value)


async def test_a_command_that_cannot_be_read_is_refused_with_the_reason(home: Path) -> None:
    tool = exec_for(home)
    assert await refusal(tool, {"command": "echo 'unclosed"}) == "command: cannot be split into words: No closing quotation"
    assert await refusal(tool, {"command": "   "}) == "command: is empty"
    assert await refusal(tool, {"command": [""]}) == "command: is empty"
    assert await refusal(tool, {"command": ["echo", "a\x00b"]}) == "command: contains a NUL character"
    shell = exec_for(home, exec={"shell": True})
    assert await refusal(shell, {"command": "  "}) == "command: is empty"
    assert await refusal(shell, {"command": "echo a\x00b"}) == "command: contains a NUL character"
    assert await shell.run({"command": "echo $((6 * 7)) | cat"}) == {
        "exit_code": 0,
        "stdout": "42\n",
        "stderr": "",
    }


async def test_a_working_folder_outside_the_workspace_or_not_a_folder_is_refused(home: Path) -> None:
    tool = exec_for(home)
    (home / "workspace" / "file.txt").write_text("x", encoding="utf-8")
    assert await refusal(tool, {"command": "ls", "cwd": "file.txt"}) == "cwd: file.txt is not a folder"
    said = await refusal(tool, {"command": "ls", "cwd": "../.."})
    assert said.startswith("cwd: '..' is not allowed"), said


async def test_an_allowed_program_given_by_its_path_runs_from_there(home: Path, tmp_path: Path) -> None:
    """An entry outside the PATH (here unconfined: the sandbox binds only the system) runs by its path."""
    program = tmp_path / "tools" / "hello"
    program.parent.mkdir()
    program.write_text("#!/bin/sh\necho hello from $0\n", encoding="utf-8")
    program.chmod(0o755)
    tool = exec_for(home, exec={"sandbox": "none", "allow": ["ls", str(program)]})
    assert tool.approval_reason({"command": "hello"}) is None
    assert await tool.run({"command": "hello"}) == {"exit_code": 0, "stdout": f"hello from {program}\n", "stderr": ""}


def _processes_of(uid: int) -> int:
    return sum(1 for p in os.listdir("/proc") if p.isdigit() and _owner(p) == uid)


async def test_an_unconfined_command_still_has_its_limits_and_runs_in_the_workspace(home: Path) -> None:
    tool = exec_for(home, exec={"sandbox": "none", "cpu_seconds": 5, "timeout": 1.0})
    (home / "workspace" / "sub").mkdir(parents=True, exist_ok=True)
    before = _processes_of(os.geteuid())
    out = await tool.run({"command": ["python3", "-c", PROBE], "cwd": "sub"})
    after = _processes_of(os.geteuid())
    seen = json.loads(out["stdout"])
    assert seen["limits"]["Max cpu time"] == "5"
    assert seen["cwd"] == str((home / "workspace" / "sub").resolve())
    assert seen["env"] == {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "HOME": str((home / "workspace" / "sub").resolve()),
    }
    # 64 more than the user's processes when it started; as root on a shared machine that count moves
    # by dozens while the command starts (the exact figure is checked for a user of the test's own)
    extra = int(seen["limits"]["Max processes"]) - 64
    assert min(before, after) // 2 <= extra <= max(before, after) * 2, (before, extra, after)
    slow = await tool.run({"command": ["sleep", "30"]})
    assert slow["note"] == "timed out after 1 s: the command was stopped" and slow["exit_code"] != 0


@pytest.mark.parametrize("sandbox", ["bwrap", "none"])
async def test_the_command_cannot_read_saber_s_own_input(home: Path, sandbox: str) -> None:
    tool = exec_for(home, exec={"sandbox": sandbox})
    read_end, write_end = os.pipe()
    os.write(write_end, b"what the user typed to saber\n")
    os.close(write_end)
    saved = os.dup(0)
    os.dup2(read_end, 0)
    try:
        out = await tool.run({"command": "cat"})
    finally:
        os.dup2(saved, 0)
        os.close(saved)
        os.close(read_end)
    assert out == {"exit_code": 0, "stdout": "", "stderr": ""}


def test_output_cut_after_the_command_ended_is_still_said() -> None:
    cut = Outcome(exit_code=0, stdout="x" * 1024, stderr="", output_cut=True)
    assert render(cut, Limits(output_bytes=1024)) == {
        "exit_code": 0,
        "stdout": "x" * 1024,
        "stderr": "",
        "note": "output over 1,024 bytes was cut",
    }
    stopped = Outcome(
        exit_code=-9,
        stdout="x",
        stderr="",
        output_cut=True,
        killed_reason="output over 1,024 bytes: the command was stopped",
    )
    assert (
        render(stopped, Limits(output_bytes=1024))["note"]
        == "output over 1,024 bytes: the command was stopped"
    )
    plain = Outcome(exit_code=0, stdout="ok", stderr="")
    assert render(plain, Limits()) == {"exit_code": 0, "stdout": "ok", "stderr": ""}


async def test_a_command_that_prints_without_end_is_stopped_and_says_so(home: Path) -> None:
    out = await exec_for(home, exec={"max_output_bytes": 4096}).run({"command": "yes"})
    assert out["stdout"] == "y\n" * 2048
    assert out["note"] == "output over 4,096 bytes: the command was stopped"


async def test_output_that_is_not_utf8_comes_back_with_replacement_characters(home: Path) -> None:
    out = await exec_for(home).run({"command": ["sh", "-c", "printf 'caf\\351\\n'; printf '\\377' >&2"]})
    assert out == {"exit_code": 0, "stdout": "caf\ufffd\n", "stderr": "\ufffd"}


@pytest.mark.parametrize("sandbox", ["bwrap", "none"])
async def test_a_cancelled_command_is_stopped_with_everything_it_started(home: Path, sandbox: str) -> None:
    tool = exec_for(home, exec={"sandbox": sandbox})
    marker = f"{os.getpid()}.{uuid.uuid4().int % 10**9}"  # this run's own: ps lists every process of the host
    run = asyncio.create_task(tool.run({"command": ["sh", "-c", f"sleep {marker} & touch started; wait"]}))
    while "started" not in await asyncio.to_thread(
        os.listdir, home / "workspace"
    ):  # the command says it runs
        assert not run.done(), run
        await asyncio.sleep(0.01)
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    ps = await asyncio.create_subprocess_exec("ps", "-eo", "args", stdout=asyncio.subprocess.PIPE)
    listing, _ = await ps.communicate()
    assert f"sleep {marker}" not in listing.decode()


async def test_a_read_only_workspace_is_read_only_even_where_its_files_allow_writing(home: Path) -> None:
    (home / "workspace").mkdir(parents=True)
    os.chmod(home / "workspace", 0o777)  # anyone may write here: only the mount stops the command
    tool = exec_for(home, exec={"workspace_write": False})
    out = await tool.run({"command": ["sh", "-c", "echo x > /workspace/x.txt"]})
    assert out["exit_code"] != 0 and "Read-only file system" in out["stderr"]
    assert not (home / "workspace" / "x.txt").exists()


@pytest.mark.parametrize("sandbox", [True, False])
async def test_a_working_folder_gone_before_the_command_starts_is_named(tmp_path: Path, sandbox: bool) -> None:
    """The folder checked by exec_command may be removed before the command starts: the error names
    the folder, not the command."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    gone = workspace / "gone"
    box = Confinement(workspace=workspace) if sandbox else None
    out = await run_confined(["ls"], box, cwd=gone)
    assert out == Outcome(exit_code=127, stdout="", stderr=f"cannot run in {gone}: No such file or directory")


AS_ANOTHER_USER = """
import asyncio, json, sys
from pathlib import Path
from saber.tools.system.sandbox import Confinement, Limits, run_confined

async def main(workspace, probe):
    seen = {}
    limits = Limits(cpu_seconds=7, memory_mb=300, processes=9)
    # First, while the user runs nothing but this process (a sandbox takes a moment to go away).
    out = await run_confined(["python3", "-c", probe], None, cwd=workspace, limits=limits)
    seen["unconfined"] = [out.exit_code, out.stdout, out.stderr]
    for network in (False, True):
        box = Confinement(workspace=workspace, network=network, limits=limits)
        out = await run_confined(["python3", "-c", probe], box, cwd=workspace)
        seen["network" if network else "probe"] = [out.exit_code, out.stdout, out.stderr]
    attack = "echo kept > /workspace/k; touch /usr/evil /etc/evil; unshare --user true || echo no-userns"
    out = await run_confined(["sh", "-c", attack], Confinement(workspace=workspace), cwd=workspace)
    seen["attack"] = [out.exit_code, out.stdout, out.stderr]
    read_only = Confinement(workspace=workspace, workspace_writable=False)
    out = await run_confined(["sh", "-c", "echo x > /workspace/x"], read_only, cwd=workspace)
    seen["read_only"] = [out.exit_code, out.stdout, out.stderr]
    out = await run_confined(["ls"], None, cwd=workspace / "locked")
    seen["locked"] = [out.exit_code, out.stdout, out.stderr]
    print(json.dumps(seen))

asyncio.run(main(Path(sys.argv[1]), sys.argv[2]))
"""


def as_another_user(uid: int | None) -> tuple[dict[str, Any], str, Path]:
    """AS_ANOTHER_USER run as ``uid`` (None: as this user): what it saw, the file its attack kept
    in the workspace, and the workspace (removed)."""
    import saber

    workspace = Path(tempfile.mkdtemp(prefix="saber-as-user-"))  # the user can reach it (not tmp_path)
    user = [] if uid is None else [shutil.which("setpriv") or "setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]
    if uid is not None:
        os.chown(workspace, uid, uid)
    (workspace / "locked").mkdir(mode=0)  # a folder the user cannot enter
    env = {**os.environ, "PYTHONPATH": str(Path(saber.__file__).resolve().parents[1])}
    try:
        # In the test's own folder: under mutation testing, mutmut's code in the child reads its settings there.
        child = subprocess.run([*user, sys.executable, "-c", AS_ANOTHER_USER, str(workspace), PROBE],
                               env=env, capture_output=True, text=True, check=False)
        assert child.returncode == 0, child.stderr
        return json.loads(child.stdout), (workspace / "k").read_text(encoding="utf-8"), workspace
    finally:
        (workspace / "locked").chmod(0o700)
        shutil.rmtree(workspace)


def _evil_written() -> bool:
    return os.path.exists("/usr/evil") or os.path.exists("/etc/evil")


async def test_saber_run_by_another_user_than_root_confines_the_command_as_much(tmp_path: Path) -> None:
    """Not run as root, Saber has bubblewrap make the user namespace itself: the command is as
    confined (namespaces, no capability, limits, read-only system, no user namespace of its own)."""
    uid = 20000 + os.getpid() % 30000 if os.geteuid() == 0 else None  # as root: a user of this run alone
    seen, kept, workspace = await asyncio.to_thread(as_another_user, uid)
    code, out, err = seen["probe"]
    assert code == 0, err
    probe = json.loads(out)
    for name in ("ipc", "uts", "net", "pid", "mnt", "user"):
        assert probe["ns"][name] != own_namespace(name), name
    assert probe["uid"] == (os.getuid() if uid is None else uid)
    assert int(probe["cap_bnd"], 16) == 0 and int(probe["cap_eff"], 16) == 0 and int(probe["cap_inh"], 16) == 0
    limits = probe["limits"]
    assert limits["Max cpu time"] == "7" and limits["Max address space"] == str(300 * 1024 * 1024)
    assert limits["Max file size"] == str(64 * 1024 * 1024) and limits["Max core file size"] == "0"
    code, out, err = seen["unconfined"]
    assert code == 0, err
    unconfined = json.loads(out)["limits"]
    assert (unconfined["Max cpu time"], unconfined["Max address space"]) == ("7", str(300 * 1024 * 1024))
    if uid is not None:  # the user runs one process, the child, when the limit is set: nine more
        assert limits["Max processes"] == "10" and unconfined["Max processes"] == "10"
    # As confined as when Saber runs as root: the same environment, folders and limits.
    (tmp_path / "w").mkdir(mode=0o755)
    box = Confinement(workspace=tmp_path / "w", limits=Limits(cpu_seconds=7, memory_mb=300, processes=9))
    as_root = await run_confined(["python3", "-c", PROBE], box, cwd=tmp_path / "w")
    assert as_root.exit_code == 0, as_root.stderr
    same = ("env", "cwd", "tmp_mode", "var_tmp_mode", "cap_bnd", "cap_eff", "cap_inh", "no_new_privs")
    assert {k: probe[k] for k in same} == {k: json.loads(as_root.stdout)[k] for k in same}
    code, out, err = seen["network"]
    assert code == 0, err
    assert json.loads(out)["ns"]["net"] == own_namespace("net")
    code, out, err = seen["attack"]
    assert kept == "kept\n" and out == "no-userns\n"
    assert "/usr/evil': Read-only file system" in err
    assert not await asyncio.to_thread(_evil_written)
    code, out, err = seen["read_only"]
    assert code != 0 and "Read-only file system" in err
    assert seen["locked"] == [126, "", f"cannot run in {workspace / 'locked'}: Permission denied"]


@pytest.mark.parametrize("sandbox", [True, False])
async def test_a_command_stopped_at_a_limit_is_reported_so(tmp_path: Path, sandbox: bool) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir(mode=0o755)

    def box(limits: Limits) -> Confinement | None:
        return Confinement(workspace=workspace, limits=limits) if sandbox else None

    slow = Limits(wall_seconds=1)  # a box's own limits are the ones that hold
    out = await run_confined(["sleep", "10"], box(slow), cwd=workspace, limits=None if sandbox else slow)
    assert (out.timed_out, out.output_cut, out.killed_reason) == (True, False, "timed out after 1 s: the command was stopped")
    assert out.exit_code == -9
    loud = Limits(output_bytes=4096)
    out = await run_confined(["yes"], box(loud), cwd=workspace, limits=None if sandbox else loud)
    assert (out.timed_out, out.output_cut, out.killed_reason) == (
        False, True, "output over 4,096 bytes: the command was stopped")
    assert out.stdout == "y\n" * 2048
    out = await run_confined(["echo", "done"], box(Limits()), cwd=workspace)
    assert out == Outcome(exit_code=0, stdout="done\n", stderr="")
