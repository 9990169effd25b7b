"""Running a command confined by bubblewrap: a read-only system, the workspace bound at
``/workspace``, a private ``/tmp``, no network unless allowed, a scrubbed environment, its own PID
namespace (a background child dies with the command), and limits on wall time, CPU time, memory,
processes, file size and output."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

SANDBOX_HOME = "/workspace"
SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin"
"""``PATH`` inside the sandbox (and for an unconfined command): no folder of the workspace on it."""
NOBODY = 65534


@dataclass(frozen=True, kw_only=True)
class Limits:
    wall_seconds: float = 30.0
    cpu_seconds: int = 30
    memory_mb: int = 1024
    processes: int = 64
    file_mb: int = 64
    output_bytes: int = 64 * 1024


@dataclass(frozen=True, kw_only=True)
class Confinement:
    workspace: Path
    workspace_writable: bool = True
    network: bool = False
    limits: Limits = field(default_factory=Limits)


@dataclass(frozen=True, kw_only=True)
class Outcome:
    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool = False
    output_cut: bool = False
    killed_reason: str = ""


def bwrap_path() -> str | None:
    return shutil.which("bwrap")


def check_bwrap() -> str | None:
    """None when bubblewrap can start a sandbox here, else why not (one line)."""
    if bwrap_path() is None:
        return "bubblewrap (bwrap) is not installed"
    for tool in ("prlimit", "setpriv"):
        if shutil.which(tool) is None:
            return f"{tool} (util-linux) is not installed"
    with tempfile.TemporaryDirectory() as scratch:
        os.chmod(scratch, 0o777)
        argv = command_line(["/bin/true"], Confinement(workspace=Path(scratch)), SANDBOX_HOME)
        try:
            done = subprocess.run(argv, capture_output=True, timeout=10, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"bubblewrap cannot run: {exc}"
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip()
        if "disable-userns" in said:
            return ("bubblewrap is too old: 0.8 or later is needed to keep commands from making user namespaces "
                    f"(--disable-userns): {said[:200]}")
        return f"bubblewrap cannot create a sandbox here: {said[:200]}"
    return None


def sandbox_uid() -> int:
    """The user the confined command runs as: ``nobody`` when Saber runs as root."""
    return NOBODY if os.geteuid() == 0 else os.geteuid()


def command_line(argv: list[str], box: Confinement, cwd: str = SANDBOX_HOME) -> list[str]:
    """The full command line. As root, bubblewrap builds the namespaces and ``setpriv`` then drops
    to ``nobody`` with no capabilities, so the process limit (counted per real user, ignored for
    root) holds; as another user, bubblewrap runs in a user namespace of its own.

    Either way the command cannot make user namespaces of its own (``--disable-userns``, which
    needs bubblewrap 0.8 and ``--unshare-user``): in one it would be root again and could mount,
    remap the filesystem and reach kernel code otherwise out of its reach. As root the user
    namespace is made by a second bubblewrap run as ``nobody``, after the drop: a user namespace
    made by root would map ``nobody`` to nothing, so the drop could not happen inside it."""
    prlimit = prlimit_argv(box.limits, sandbox_uid())
    if os.geteuid() == 0:
        drop = [_which("setpriv"), f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--bounding-set=-all",
                "--inh-caps=-all", "--no-new-privs"]
        namespaces = ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
        if not box.network:
            namespaces.append("--unshare-net")
        no_userns = [_which("bwrap"), "--die-with-parent", "--unshare-user", "--disable-userns", "--dev-bind", "/", "/",
                     "--chdir", cwd, "--"]
        return [_which("bwrap"), "--die-with-parent", "--new-session", *namespaces, *_mounts(box, cwd), *drop, *prlimit,
                *no_userns, *argv]
    namespaces = ["--unshare-all", "--unshare-user", "--disable-userns", "--cap-drop", "ALL"]
    namespaces += ["--share-net"] if box.network else []
    return [*prlimit, _which("bwrap"), "--die-with-parent", "--new-session", *namespaces, *_mounts(box, cwd), *argv]


def prlimit_argv(limits: Limits, uid: int) -> list[str]:
    """util-linux ``prlimit`` applies the limits and execs the command (no Python code runs
    between fork and exec). The process count is per real user, so it is set above what that
    user runs now."""
    mb = 1024 * 1024
    nproc = _processes_of(uid) + limits.processes
    return [_which("prlimit"), f"--cpu={limits.cpu_seconds}", f"--as={limits.memory_mb * mb}",
            f"--fsize={limits.file_mb * mb}", "--core=0", f"--nproc={nproc}", "--"]


def _which(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise RuntimeError(f"{name} is not installed")
    return found


def _mounts(box: Confinement, cwd: str) -> list[str]:
    out = ["--clearenv", "--ro-bind", "/usr", "/usr"]
    for name in ("bin", "sbin", "lib", "lib64", "lib32"):
        top = Path("/") / name
        if top.is_symlink():
            out += ["--symlink", os.readlink(top), str(top)]
        elif top.is_dir():
            out += ["--ro-bind", str(top), str(top)]
    # bubblewrap makes the parents of a file it binds owner-only (0700): without its own /etc the
    # command, run as nobody, could read none of the files bound below (no user name, no awk).
    out += ["--perms", "0755", "--dir", "/etc"]
    for etc in ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "localtime", "nsswitch.conf",
                "passwd", "group", "ssl", "ca-certificates", "mime.types"):
        out += ["--ro-bind-try", f"/etc/{etc}", f"/etc/{etc}"]
    if box.network:
        out += ["--ro-bind-try", "/etc/resolv.conf", "/etc/resolv.conf", "--ro-bind-try", "/etc/hosts", "/etc/hosts"]
    out += ["--proc", "/proc", "--dev", "/dev", "--perms", "01777", "--tmpfs", "/tmp", "--perms", "01777", "--tmpfs", "/var/tmp",
            "--bind" if box.workspace_writable else "--ro-bind", str(box.workspace), SANDBOX_HOME,
            "--chdir", cwd,
            "--setenv", "PATH", SANDBOX_PATH, "--setenv", "HOME", SANDBOX_HOME,
            "--setenv", "LANG", "C.UTF-8", "--setenv", "TMPDIR", "/tmp", "--setenv", "PYTHONDONTWRITEBYTECODE", "1",
            "--"]
    return out


def _processes_of(uid: int) -> int:
    count = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid == uid:
                    count += 1
            except OSError:
                continue
    return count


class _Watched(asyncio.subprocess.SubprocessStreamProtocol):
    """The protocol of ``asyncio.create_subprocess_exec``, telling when the process itself ends:
    ``Process.wait`` also waits for its output to close, which a background child may hold open."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(limit=2**16, loop=loop)
        self.ended = asyncio.Event()

    def process_exited(self) -> None:
        super().process_exited()
        self.ended.set()


async def run_confined(argv: list[str], box: Confinement | None, *, cwd: Path, limits: Limits | None = None) -> Outcome:
    """Run ``argv`` (inside bubblewrap when ``box`` is given, else unconfined in ``cwd``) with the
    limits (the box's, else ``limits``); output past the cap stops the command and says so. When
    the command ends (or is stopped, or the caller is cancelled) whatever it left running in its
    session is killed: unconfined too, a background child does not outlive the command."""
    limits = box.limits if box is not None else limits or Limits()
    if box is not None:
        inner = SANDBOX_HOME + ("/" + cwd.relative_to(box.workspace).as_posix() if cwd != box.workspace else "")
        full = command_line(argv, box, inner)
    else:
        full = prlimit_argv(limits, os.geteuid()) + argv
    env = {"PATH": SANDBOX_PATH, "LANG": "C.UTF-8", "HOME": str(cwd)}
    loop = asyncio.get_running_loop()
    try:
        transport, watched = await loop.subprocess_exec(
            lambda: _Watched(loop), *full, cwd=str(cwd), env=env, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, start_new_session=True)
    except (FileNotFoundError, PermissionError) as exc:  # the folder: what runs first (bwrap, prlimit) was found
        code = 127 if isinstance(exc, FileNotFoundError) else 126
        return Outcome(exit_code=code, stdout="", stderr=f"cannot run in {cwd}: {exc.strerror}")
    proc = asyncio.subprocess.Process(transport, watched, loop)
    budget = [limits.output_bytes]
    cut = asyncio.Event()
    assert proc.stdout is not None and proc.stderr is not None
    readers = asyncio.gather(_drain(proc.stdout, budget, cut), _drain(proc.stderr, budget, cut))
    timed_out = False
    reason = ""
    ended = asyncio.ensure_future(watched.ended.wait())
    cutter = asyncio.ensure_future(cut.wait())
    try:
        done, _ = await asyncio.wait({ended, cutter}, timeout=limits.wall_seconds, return_when=asyncio.FIRST_COMPLETED)
        if ended not in done:
            if cutter in done:
                reason = f"output over {limits.output_bytes:,} bytes: the command was stopped"
            else:
                timed_out = True
                reason = f"timed out after {limits.wall_seconds:g} s: the command was stopped"
    finally:
        ended.cancel()
        cutter.cancel()
        _kill_group(proc.pid)
        await proc.wait()
    out, err = await readers
    return Outcome(exit_code=proc.returncode, stdout=out.decode("utf-8", "replace"), stderr=err.decode("utf-8", "replace"),
                   timed_out=timed_out, output_cut=cut.is_set(), killed_reason=reason)


async def _drain(stream: asyncio.StreamReader, budget: list[int], cut: asyncio.Event) -> bytes:
    kept = bytearray()
    while chunk := await stream.read(65536):
        take = min(len(chunk), max(budget[0], 0))
        kept += chunk[:take]
        budget[0] -= len(chunk)
        if budget[0] < 0:
            cut.set()
    return bytes(kept)


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
