"""System tools: the workspace's files (``read_file``, ``list_dir``, ``search_files``,
``write_file``) and ``exec_command`` inside a bubblewrap sandbox, configured from ``Settings``.

``exec_command`` is off by default. When enabled but bubblewrap cannot run, it is not registered
and ``system_tools_status`` says why — it never silently runs unconfined; only an explicit
``sandbox = "none"`` allows that, with a warning."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from saber.tools.base import Tool
from saber.tools.system.allowlist import AllowList
from saber.tools.system.commands import CommandPolicy, exec_tool
from saber.tools.system.files import FileLimits, file_tools
from saber.tools.system.sandbox import Limits, check_bwrap, sandbox_uid
from saber.tools.system.workspace import Workspace

if TYPE_CHECKING:
    from saber.config import Settings

__all__ = ["SystemTools", "Workspace", "system_notes", "system_tools"]

log = logging.getLogger(__name__)


@dataclass(kw_only=True)
class SystemTools:
    tools: list[Tool]
    workspace: Workspace
    notes: list[str] = field(default_factory=list)
    """What is off and why (shown by ``saber config`` and ``/api/status``)."""


def system_notes(settings: Settings) -> list[str]:
    """What of the system tools is off and why, without building them (``saber config``)."""
    notes = []
    if not settings.files.enabled:
        return ["file tools are off (files.enabled = false)"]
    if not settings.files.write:
        notes.append("write_file is off (files.write = false)")
    if not settings.exec.enabled:
        notes.append("exec_command is off (exec.enabled = false)")
    elif settings.exec.sandbox == "none":
        notes.append("exec_command runs WITHOUT a sandbox (exec.sandbox = \"none\")")
    else:
        problem = check_bwrap()
        if problem is not None:
            notes.append(f"exec_command is not available: {problem} (it never runs unconfined unless "
                         "exec.sandbox = \"none\")")
    return notes


def system_tools(settings: Settings) -> SystemTools:
    roots = list(settings.files.roots) or [settings.home / "workspace"]
    workspace = Workspace(roots)
    notes: list[str] = []
    if not settings.files.enabled:
        return SystemTools(tools=[], workspace=workspace, notes=["file tools are off (files.enabled = false)"])
    workspace.ensure()
    tools = file_tools(workspace, FileLimits(max_read_bytes=settings.files.max_read_bytes,
                                             max_write_bytes=settings.files.max_write_bytes), write=settings.files.write)
    if not settings.files.write:
        notes.append("write_file is off (files.write = false)")
    if not settings.exec.enabled:
        notes.append("exec_command is off (exec.enabled = false)")
        return SystemTools(tools=tools, workspace=workspace, notes=notes)
    sandboxed = settings.exec.sandbox != "none"
    if sandboxed:
        problem = check_bwrap()
        if problem is not None:
            notes.append(f"exec_command is not available: {problem} (it never runs unconfined unless "
                         "exec.sandbox = \"none\")")
            log.warning("exec_command is not registered: %s", problem)
            return SystemTools(tools=tools, workspace=workspace, notes=notes)
    else:
        notes.append("exec_command runs WITHOUT a sandbox (exec.sandbox = \"none\")")
        log.warning("exec_command runs without a sandbox: exec.sandbox = \"none\"")
    if sandboxed and settings.exec.workspace_write:
        _hand_workspace_to_sandbox(workspace)
    policy = CommandPolicy(
        sandbox=sandboxed, shell=settings.exec.shell, network=settings.exec.network,
        workspace_writable=settings.exec.workspace_write, allow=tuple(settings.exec.allow),
        limits=Limits(wall_seconds=settings.exec.timeout, cpu_seconds=settings.exec.cpu_seconds,
                      memory_mb=settings.exec.memory_mb, processes=settings.exec.max_processes,
                      output_bytes=settings.exec.max_output_bytes),
    )
    tools.append(exec_tool(workspace, policy))
    notes += [f"exec.allow: {skipped} (it asks for approval)"
              for skipped in AllowList(policy.allow, workspace=workspace.roots).skipped]
    return SystemTools(tools=tools, workspace=workspace, notes=notes)


def _hand_workspace_to_sandbox(workspace: Workspace) -> None:
    """As root the sandbox runs as ``nobody``: the workspace roots must be writable by it."""
    uid = sandbox_uid()
    if uid == os.geteuid():
        return
    workspace.owner = uid
    for root in workspace.roots:
        try:
            os.chown(root, uid, uid)
        except OSError as exc:
            log.warning("cannot hand %s to the sandbox user: %s", root, exc)
