"""``exec_command``: a command run inside the sandbox, returning its exit code and output.

A string is split with shell rules and run as an argv, never through a shell, unless the
configuration says ``shell = true``. Commands on the allow-list run at once; any other asks a
person first (the tool's approval predicate)."""

from __future__ import annotations

import dataclasses
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from saber.tools.base import Tool
from saber.tools.errors import ToolArgumentError
from saber.tools.system.sandbox import Confinement, Limits, Outcome, run_confined
from saber.tools.system.workspace import Workspace

DEFAULT_ALLOW = ("ls", "cat", "head", "tail", "wc", "grep", "rg", "find", "echo", "pwd", "date", "sort", "uniq",
                 "diff", "file", "stat", "du", "python3 -c")


@dataclass(frozen=True, kw_only=True)
class CommandPolicy:
    sandbox: bool = True
    """False only when the configuration says ``sandbox = "none"``: the command then runs unconfined."""
    shell: bool = False
    network: bool = False
    workspace_writable: bool = True
    limits: Limits = field(default_factory=Limits)
    allow: Sequence[str] = DEFAULT_ALLOW
    """Commands (argv prefixes, e.g. "python3 -c") that run without asking."""


def split_command(command: str | list[str], *, shell: bool) -> list[str]:
    if isinstance(command, list):
        argv = [str(a) for a in command]
    else:
        text = command.strip()
        if shell:
            return ["/bin/sh", "-c", text] if text else []
        try:
            argv = shlex.split(text)
        except ValueError as exc:
            raise ToolArgumentError(f"command: cannot be split into words: {exc}", tool="exec_command") from None
    if not argv or not argv[0]:
        raise ToolArgumentError("command: is empty", tool="exec_command")
    if any("\x00" in a for a in argv):
        raise ToolArgumentError("command: contains a NUL character", tool="exec_command")
    return argv


def allowed(argv: list[str], allow: Sequence[str]) -> bool:
    """True when ``argv`` starts with one of the allow-list's entries, word for word."""
    name = Path(argv[0]).name if argv else ""
    words = [name, *argv[1:]]
    for entry in allow:
        prefix = shlex.split(entry)
        if prefix and words[: len(prefix)] == prefix:
            return True
    return False


def render(outcome: Outcome, limits: Limits) -> dict[str, object]:
    note = outcome.killed_reason
    if outcome.output_cut and not note:
        note = f"output over {limits.output_bytes:,} bytes was cut"
    result: dict[str, object] = {"exit_code": outcome.exit_code, "stdout": outcome.stdout, "stderr": outcome.stderr}
    if note:
        result["note"] = note
    return result


def exec_tool(workspace: Workspace, policy: CommandPolicy) -> Tool:
    def needs_approval(args: dict[str, object]) -> str | None:
        raw = args.get("command")
        try:
            argv = split_command(raw if isinstance(raw, (str, list)) else str(raw), shell=False)
        except ToolArgumentError:
            return "the command cannot be checked against the allow-list"
        if policy.shell:
            return "shell commands always need approval"
        if allowed(argv, policy.allow):
            return None
        return f"{Path(argv[0]).name} is not on the allow-list"

    async def execute(args: dict[str, object]) -> dict[str, object]:
        raw = args["command"]
        argv = split_command(raw if isinstance(raw, (str, list)) else str(raw), shell=policy.shell)
        where = workspace.locate(str(args.get("cwd") or "."), field="cwd", tool="exec_command")
        if not where.path.is_dir():
            raise ToolArgumentError(f"cwd: {where.shown} is not a folder", tool="exec_command")
        box = Confinement(workspace=where.root, workspace_writable=policy.workspace_writable, network=policy.network,
                          limits=policy.limits) if policy.sandbox else None
        outcome = await run_confined(argv, box, cwd=where.path)
        return render(outcome, policy.limits)

    sandbox_word = "inside a sandbox (read-only system, the workspace at /workspace, no network)" if policy.sandbox \
        else "WITHOUT a sandbox"
    described = Tool.from_json_schema(
        "exec_command",
        f"Run a command {sandbox_word} and return its exit code, stdout and stderr. "
        f"Runs without asking: {', '.join(policy.allow) or 'nothing'}; anything else waits for a person's approval.",
        {"type": "object", "properties": {
            "command": {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}, "minItems": 1}],
                        "description": "The command line, e.g. \"ls -la\" or \"python3 -c 'print(1)'\", or its words as a list."},
            "cwd": {"type": "string", "description": "Folder in the workspace to run in (default: the workspace)."},
        }, "required": ["command"]},
        execute,
    )
    return dataclasses.replace(described, requires_approval=needs_approval)
