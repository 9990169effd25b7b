"""``exec_command``: a command run inside the sandbox, returning its exit code and output.

A string is split with shell rules and run as an argv, never through a shell, unless the
configuration says ``shell = true``. Commands the allow-list admits (``allowlist``: a program of
the system with harmless arguments) run at once, by the binary's absolute path; any other asks a
person first (the tool's approval predicate)."""

from __future__ import annotations

import dataclasses
import logging
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field

from saber.tools.base import Tool
from saber.tools.errors import ToolArgumentError
from saber.tools.system.allowlist import DEFAULT_ALLOW, AllowList
from saber.tools.system.sandbox import Confinement, Limits, Outcome, run_confined
from saber.tools.system.workspace import Workspace

log = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class CommandPolicy:
    sandbox: bool = True
    """False only when the configuration says ``sandbox = "none"``: the command then runs unconfined."""
    shell: bool = False
    network: bool = False
    workspace_writable: bool = True
    limits: Limits = field(default_factory=Limits)
    allow: Sequence[str] = DEFAULT_ALLOW
    """Programs of the system that run without asking, with their argument rules (``allowlist``)."""


def split_command(command: str | list[str], *, shell: bool) -> list[str]:
    if isinstance(command, list):
        argv = [str(a) for a in command]
    else:
        text = command.strip()
        if shell and text:
            argv = ["/bin/sh", "-c", text]
        else:
            try:
                argv = shlex.split(text)
            except ValueError as exc:
                raise ToolArgumentError(f"command: cannot be split into words: {exc}", tool="exec_command") from None
    if not argv or not argv[0]:
        raise ToolArgumentError("command: is empty", tool="exec_command")
    if any("\x00" in a for a in argv):
        raise ToolArgumentError("command: contains a NUL character", tool="exec_command")
    return argv


def render(outcome: Outcome, limits: Limits) -> dict[str, object]:
    note = outcome.killed_reason
    if outcome.output_cut and not note:
        note = f"output over {limits.output_bytes:,} bytes was cut"
    result: dict[str, object] = {"exit_code": outcome.exit_code, "stdout": outcome.stdout, "stderr": outcome.stderr}
    if note:
        result["note"] = note
    return result


def exec_tool(workspace: Workspace, policy: CommandPolicy) -> Tool:
    allow = AllowList(policy.allow, workspace=workspace.roots)
    for skipped in allow.skipped:
        log.warning("exec.allow: %s (it asks for approval)", skipped)

    def needs_approval(args: dict[str, object]) -> str | None:
        raw = args.get("command")
        if policy.shell:
            return "shell commands always need approval"
        try:
            argv = split_command(raw if isinstance(raw, (str, list)) else str(raw), shell=False)
        except ToolArgumentError:
            return "the command cannot be checked against the allow-list"
        return allow.check(argv).reason

    async def execute(args: dict[str, object]) -> dict[str, object]:
        raw = args["command"]
        argv = split_command(raw if isinstance(raw, (str, list)) else str(raw), shell=policy.shell)
        if not policy.shell:
            argv = allow.check(argv).argv  # the argv checked is the argv that runs (by its absolute path)
        where = workspace.locate(str(args.get("cwd") or "."), field="cwd", tool="exec_command")
        if not where.path.is_dir():
            raise ToolArgumentError(f"cwd: {where.shown} is not a folder", tool="exec_command")
        box = Confinement(workspace=where.root, workspace_writable=policy.workspace_writable, network=policy.network,
                          limits=policy.limits) if policy.sandbox else None
        outcome = await run_confined(argv, box, cwd=where.path, limits=policy.limits)
        return render(outcome, policy.limits)

    sandbox_word = "inside a sandbox (read-only system, the workspace at /workspace, no network)" if policy.sandbox \
        else "WITHOUT a sandbox"
    described = Tool.from_json_schema(
        "exec_command",
        f"Run a command {sandbox_word} and return its exit code, stdout and stderr. "
        f"Runs without asking: {allow.describe()} (not with options that write, delete or run programs, "
        "e.g. find -delete/-exec, sort -o); anything else waits for a person's approval.",
        {"type": "object", "properties": {
            "command": {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}, "minItems": 1}],
                        "description": "The command line, e.g. \"ls -la\" or \"grep -n TODO notes.txt\", or its words as a list."},
            "cwd": {"type": "string", "description": "Folder in the workspace to run in (default: the workspace)."},
        }, "required": ["command"]},
        execute,
    )
    # Not idempotent: a command stopped at its timeout may have done part of its work. Its own
    # wall-time limit fires before the graph's step timeout and is reported in its result.
    return dataclasses.replace(described, requires_approval=needs_approval, idempotent=False,
                               timeout=policy.limits.wall_seconds)
