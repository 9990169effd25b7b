"""Mutation testing of the modules that guard users and data, and of the core: what no test checks.

    python bench/mutation.py                     # every group below, one after the other
    python bench/mutation.py auth queue          # only these groups (graph = graph-core graph-execute)
    python bench/mutation.py --list              # the groups, their modules and their tests
    python bench/mutation.py --report            # the table again, from the last runs

Needs the ``mutation`` extra (``pip install -e '.[dev,mutation]'``). For each group, mutmut 3
(``[tool.mutmut]`` in pyproject.toml holds the settings every group shares) mutates only that
group's modules and runs only the tests that exercise them: the group's test files, and of those,
for each mutant, the tests that called the mutated function. Each group runs in a copy of the
project under ``mutants/<group>/`` (git-ignored), so groups never share mutmut's state.

A mutant is *killed* when a test fails (or hangs: mutmut's timeout), *survived* when every test
passes. Mutants that change nothing a user could observe are listed with a one-line reason in
``bench/mutation_equivalent.toml`` and left out of the score; a listed mutant that a test now
kills, or that no longer exists, is reported as stale so the list cannot rot. Its second table,
``killed_in_subprocess``, names mutants that a test kills where mutmut cannot see it (the test
runs the code in a child process, e.g. ``saber serve`` stopped by SIGTERM), each with that test,
checked by applying the mutant by hand; they count as killed.

``--jail`` runs each group's mutmut where a mutant cannot harm the host, for the groups whose tests
attack (exec-*, exec, files): a mutant of the sandbox that drops its read-only binds once let a test's
attack write /usr/evil for real. See :func:`jail_argv`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "mutants"
EQUIVALENT = Path(__file__).resolve().parent / "mutation_equivalent.toml"


@dataclass(frozen=True, kw_only=True)
class Group:
    modules: tuple[str, ...]
    """Source files to mutate, relative to the repository."""
    tests: tuple[str, ...]
    """Test files (one tests/ folder per group: each folder has its own conftest)."""
    test_timeout: int = 300
    """Seconds one test may run before pytest-timeout fails it (``timeout`` in pyproject.toml is
    300): a hang detector, lowered for groups whose mutants hang (a step timeout dropped leaves a
    tool asleep for an hour), so that such a mutant is caught in seconds instead of mutmut's own
    limit, 30 times the tests' time."""


GROUPS: dict[str, Group] = {
    "auth": Group(
        modules=("src/saber/server/auth.py",),
        tests=("tests/unit/core/test_server_keys.py",),
    ),
    "hostguard": Group(
        modules=("src/saber/server/hostguard.py",),
        tests=("tests/unit/core/test_hostguard.py", "tests/unit/core/test_hostguard_requests.py"),
    ),
    "approvals": Group(
        modules=("src/saber/approvals/broker.py", "src/saber/approvals/store.py"),
        tests=("tests/integration/approvals/test_approvals.py", "tests/integration/approvals/test_approval_broker.py"),
    ),
    "workspace": Group(
        modules=("src/saber/tools/system/workspace.py",),
        tests=("tests/integration/system/test_workspace_paths.py", "tests/integration/system/test_file_tools.py"),
    ),
    "files": Group(
        modules=("src/saber/tools/system/files.py", "src/saber/tools/system/safe_open.py"),
        tests=("tests/integration/system/test_file_tools.py", "tests/integration/system/test_workspace_paths.py",
               "tests/integration/system/test_safe_open.py", "tests/integration/system/test_file_listing.py",
               "tests/integration/system/test_file_reading.py"),
    ),
    # exec_command, split per module so that each part finishes in a sitting: a mutant of the
    # sandbox runs the slow tests that start bubblewrap, one of the allow-list only its fast unit
    # tests (the checker is pure; the integration tests' reasons repeat the unit tests'). "exec"
    # is the union of the three, all three modules against all four test files.
    "exec-allowlist": Group(
        modules=("src/saber/tools/system/allowlist.py",),
        tests=("tests/unit/tools/test_exec_allowlist.py",),
    ),
    "exec-commands": Group(
        modules=("src/saber/tools/system/commands.py",),
        tests=("tests/integration/system/test_exec_injection.py", "tests/integration/system/test_exec_sandbox.py",
               "tests/integration/system/test_exec_confinement.py", "tests/unit/tools/test_exec_allowlist.py"),
    ),
    "exec-sandbox": Group(
        modules=("src/saber/tools/system/sandbox.py",),
        tests=("tests/integration/system/test_exec_sandbox.py", "tests/integration/system/test_exec_confinement.py"),
    ),
    "exec": Group(
        modules=("src/saber/tools/system/commands.py", "src/saber/tools/system/allowlist.py",
                 "src/saber/tools/system/sandbox.py"),
        tests=("tests/integration/system/test_exec_injection.py", "tests/integration/system/test_exec_sandbox.py",
               "tests/integration/system/test_exec_confinement.py", "tests/unit/tools/test_exec_allowlist.py"),
    ),
    "queue": Group(
        modules=("src/saber/cluster/queue.py",),
        tests=("tests/integration/cluster/test_run_queue.py",),
    ),
    "coercion": Group(
        modules=("src/saber/tools/coerce.py",),
        tests=("tests/unit/tools/test_tool_coerce_strict.py", "tests/unit/tools/test_tool_decorator.py",
               "tests/unit/tools/test_tool_json_schema.py", "tests/unit/tools/test_tool_coerce_properties.py"),
    ),
    "plan-validation": Group(
        modules=("src/saber/planner/validate.py",),
        tests=("tests/unit/planner/test_planner_parse.py", "tests/unit/planner/test_planner_hardening.py",
               "tests/unit/planner/test_planner_validate.py"),
    ),
    "placeholders": Group(
        modules=("src/saber/graph/placeholders.py",),
        tests=("tests/unit/graph/test_graph_placeholders.py", "tests/unit/graph/test_graph_placeholders_properties.py"),
    ),
    # The graph runtime's core, in two groups: each execute.py mutant runs most of the graph tests.
    "graph-core": Group(
        modules=("src/saber/graph/retry.py", "src/saber/graph/races.py", "src/saber/graph/attempts.py",
                 "src/saber/graph/state.py"),
        tests=("tests/unit/graph",),
        test_timeout=15,
    ),
    "graph-execute": Group(
        modules=("src/saber/graph/execute.py",),
        tests=("tests/unit/graph",),
        test_timeout=15,
    ),
    "redaction": Group(
        modules=("src/saber/redact.py",),
        tests=("tests/unit/core/test_redact.py", "tests/unit/core/test_redact_rules.py",
               "tests/unit/core/test_redact_fastpath.py"),
    ),
    "sse": Group(
        modules=("src/saber/server/sse.py",),
        tests=("tests/unit/core/test_sse_resume.py", "tests/unit/core/test_sse_cancel.py",
               "tests/integration/server/test_server_tasks.py"),
    ),
}

ALIASES: dict[str, tuple[str, ...]] = {"graph": ("graph-core", "graph-execute")}
"""A name that stands for several groups, run one after the other."""

_KILLED = {1: "killed", 3: "killed", 36: "timeout", 24: "timeout", -24: "timeout", 152: "timeout",
           255: "timeout", 37: "killed"}
"""mutmut's exit codes (mutmut/stats.py): a failing test, a hang, a type-check failure all catch it."""


def equivalent(table: str = "equivalent") -> dict[str, str]:
    """Mutant name → why it cannot change anything observable (bench/mutation_equivalent.toml);
    with ``table="killed_in_subprocess"``: → the test that kills it in a process mutmut does not see."""
    if not EQUIVALENT.exists():
        return {}
    data = tomllib.loads(EQUIVALENT.read_text("utf-8"))
    return {name: str(reason) for name, reason in data.get(table, {}).items()}


def _workdir(name: str, group: Group) -> Path:
    """A fresh copy of the project for one group, its pyproject narrowed to the group."""
    work = WORK / name
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    shutil.copytree(ROOT / "src", work / "src", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "tests", work / "tests", ignore=shutil.ignore_patterns("__pycache__"))
    text = (ROOT / "pyproject.toml").read_text("utf-8")
    table = "\n".join([
        "[tool.mutmut]",
        'source_paths = ["src/"]',
        f"only_mutate = {json.dumps(list(group.modules))}",
        f'pytest_add_cli_args = ["-p", "no:cacheprovider", "-n", "0", "-q", "--timeout", "{group.test_timeout}"]',
        f"pytest_add_cli_args_test_selection = {json.dumps(list(group.tests))}",
        "",
    ])
    text = re.sub(r"(?ms)^\[tool\.mutmut\]\n.*?(?=^\[|\Z)", "", text) + "\n" + table
    (work / "pyproject.toml").write_text(text, "utf-8")
    return work


def jail_argv(work: Path, argv: list[str]) -> list[str]:
    """``argv`` in a jail where only ``work`` (and a private /tmp and /dev) can be written.

    bubblewrap, as the real root, binds the whole host read-only; inside it :func:`_userns_exec`
    moves the command into a user namespace of its own (uids 0-65535 mapped to themselves, so the
    tests' own bubblewrap can still drop to ``nobody``) with new mount and PID namespaces. Mounts
    inherited by a less privileged user namespace are locked: its root cannot remount the host
    read-write, nor signal a process outside. Needs root (the jail writes the uid map)."""
    if os.geteuid() != 0:
        raise SystemExit("--jail needs root: it maps uids 0-65535 into the jail for the tests' own bubblewrap")
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise SystemExit("--jail needs bubblewrap (bwrap)")
    return [bwrap, "--die-with-parent", "--ro-bind", "/", "/", "--bind", "/proc", "/proc", "--dev", "/dev",
            "--tmpfs", "/tmp", "--bind", str(work), str(work), "--chdir", str(work), "--",
            sys.executable, str(Path(__file__).resolve()), "--userns-exec", "--", *argv]


def _userns_exec(argv: list[str]) -> int:
    """Run ``argv`` in new user, mount and PID namespaces (the inner half of :func:`jail_argv`)."""
    import ctypes

    clone_newns, clone_newuser, clone_newpid = 0x00020000, 0x10000000, 0x20000000
    go_read, go_write = os.pipe()
    ready_read, ready_write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(go_write)
        os.close(ready_read)
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.unshare(clone_newuser | clone_newns | clone_newpid) != 0:
            os.write(2, f"unshare: {os.strerror(ctypes.get_errno())}\n".encode())
            os._exit(70)
        os.write(ready_write, b"x")
        os.read(go_read, 1)
        if os.fork() == 0:  # the first child in the new PID namespace is its init
            os._exit(_init(argv))
        os._exit(os.waitstatus_to_exitcode(os.wait()[1]) & 0xFF)
    os.close(go_read)
    os.close(ready_write)
    if os.read(ready_read, 1):
        for kind in ("uid_map", "gid_map"):
            Path(f"/proc/{pid}/{kind}").write_text("0 0 65536\n")
        os.write(go_write, b"x")
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def _init(argv: list[str]) -> int:
    """PID 1 of the jail: mounts the jail's own /proc (bubblewrap finds the processes it starts
    there by their pid in this namespace), runs ``argv`` and reaps every orphan, which a program
    not written to be init (mutmut) would leave as zombies; returns its status."""
    import ctypes
    import signal

    ms_nosuid, ms_nodev, ms_noexec = 2, 4, 8
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.mount(b"proc", b"/proc", b"proc", ms_nosuid | ms_nodev | ms_noexec, None) != 0:
        os.write(2, f"mount /proc: {os.strerror(ctypes.get_errno())}\n".encode())
        return 70
    child = os.fork()
    if child == 0:
        os.execvp(argv[0], argv)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda number, _frame: os.kill(child, number))
    while True:
        pid, status = os.wait()
        if pid == child:
            return os.waitstatus_to_exitcode(status) & 0xFF


def run_group(name: str, group: Group, *, children: int, jail: bool = False) -> None:
    work = _workdir(name, group)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith("SABER_")}
    # Subprocesses (`python -m saber`) import the mutants too. The folder must exist before mutmut
    # starts: Python remembers a missing sys.path entry and would import the unmutated install.
    (work / "mutants" / "src").mkdir(parents=True)
    env["PYTHONPATH"] = str(work / "mutants" / "src")
    env["PYTEST_DEBUG_TEMPROOT"] = str(work / "tmp")
    (work / "tmp").mkdir()
    command = [sys.executable, "-m", "mutmut", "run", "--max-children", str(children)]
    if jail:
        env["HOME"] = str(work / "tmp")
        command = jail_argv(work, command)
    print(f"== {name}: {', '.join(group.modules)}{' (jailed)' if jail else ''}", flush=True)
    started = time.monotonic()
    subprocess.run(command, cwd=work, env=env, check=False,
                   stdout=subprocess.DEVNULL if not os.environ.get("MUTATION_VERBOSE") else None)
    print(f"   {name}: {time.monotonic() - started:.0f} s", flush=True)


def results(name: str, group: Group) -> dict[str, dict[str, str]]:
    """Module → {mutant name: status} of a group's last run."""
    out: dict[str, dict[str, str]] = {}
    for module in group.modules:
        meta = WORK / name / "mutants" / (module + ".meta")
        codes = json.loads(meta.read_text("utf-8"))["exit_code_by_key"] if meta.exists() else {}
        out[module] = {key: _status(code, key) for key, code in codes.items()}
    return out


def _status(code: int | None, name: str = "") -> str:
    if code in _KILLED:
        return "killed"
    if code == 0 and name in equivalent("killed_in_subprocess"):
        return "killed"  # by a test whose call of the mutant runs in a child process (mutmut sees only its own)
    return {0: "survived", 5: "no tests", 33: "no tests", None: "not checked"}.get(code, "suspicious")


def report(names: list[str], *, show_survivors: bool) -> int:
    """Print the table; the exit status is 1 when a module is under 90 % or the equivalent list is stale."""
    known = equivalent()
    seen: set[str] = set()
    rows = ["| module | mutants | killed | equivalent | survived | score |", "|---|---|---|---|---|---|"]
    failing = False
    survivors: list[str] = []
    for name in names:
        for module, statuses in results(name, GROUPS[name]).items():
            if not statuses:
                rows.append(f"| {module.removeprefix('src/saber/')} | not run | | | | |")
                continue
            unchecked = sum(1 for s in statuses.values() if s == "not checked")  # the run was stopped first
            killed = sum(1 for s in statuses.values() if s == "killed")
            equal = [k for k, s in statuses.items() if k in known and s not in ("killed", "not checked")]
            seen.update(k for k in statuses if k in known)
            stale = [k for k, s in statuses.items() if k in known and s == "killed"]
            alive = [k for k, s in statuses.items() if s not in ("killed", "not checked") and k not in known]
            counted = len(statuses) - len(equal) - unchecked
            score = killed / counted if counted else 1.0
            failing = failing or score < 0.9 or unchecked > 0
            total = f"{len(statuses)} ({unchecked} not checked)" if unchecked else f"{len(statuses)}"
            rows.append(f"| {module.removeprefix('src/saber/')} | {total} | {killed} | {len(equal)} "
                        f"| {len(alive)} | {score:.1%} |")
            survivors += [f"  {k} ({statuses[k]})" for k in alive]
            survivors += [f"  {k}: listed as equivalent but killed now (stale)" for k in stale]
            failing = failing or bool(stale)
    print("\n".join(rows))
    if show_survivors and survivors:
        print("\nnot killed (see them with: cd mutants/<group> && mutmut show NAME):")
        print("\n".join(survivors))
    return 1 if failing else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("groups", nargs="*",
                        help=f"groups to run (default all but exec, the union of exec-*): {', '.join(GROUPS)}; "
                             "graph = graph-core graph-execute")
    parser.add_argument("--list", action="store_true", help="print the groups and exit")
    parser.add_argument("--report", action="store_true", help="print the table of the last runs, run nothing")
    parser.add_argument("--children", type=int, default=2, help="parallel mutmut workers (default 2)")
    parser.add_argument("--jail", action="store_true",
                        help="run mutmut with the host read-only but for mutants/<group> (needs root and bwrap)")
    parser.add_argument("--userns-exec", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.userns_exec:
        return _userns_exec(args.groups)
    unknown = [g for g in args.groups if g not in GROUPS and g not in ALIASES]
    if unknown:
        aliases = "; ".join(f"{alias} = {' '.join(names)}" for alias, names in ALIASES.items())
        parser.error(f"unknown group(s) {', '.join(unknown)}; the groups are {', '.join(GROUPS)} ({aliases})")
    names = ([g for name in args.groups for g in ALIASES.get(name, (name,))]
             or [g for g in GROUPS if g != "exec"])  # exec is the union of the exec-* groups
    if args.list:
        for name in names:
            print(f"{name}: {' '.join(GROUPS[name].modules)}\n    tests: {' '.join(GROUPS[name].tests)}")
        return 0
    if not args.report:
        for name in names:
            run_group(name, GROUPS[name], children=args.children, jail=args.jail)
    return report(names, show_survivors=True)


if __name__ == "__main__":
    sys.exit(main())
