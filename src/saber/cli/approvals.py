"""``saber approve``, ``saber deny`` and ``saber approvals``: answer a waiting step from any
terminal (the task may run in another process: it sees the answer within a second)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from saber.cli.output import CLIError, UsageError, out, plain, print_json


def _store() -> Any:
    from saber.approvals.store import ApprovalStore
    from saber.config import Settings
    from saber.db import open_database

    settings = Settings.load()
    return ApprovalStore(open_database(settings.database.url or settings.sqlite_path, pool_size=1))


def _answer(task_id: str, node_id: str, *, approve: bool, reason: str, for_task: bool) -> None:
    from saber.cli.ids import resolve

    store = _store()
    try:
        pending = store.pending()
        tasks = sorted({q.task_id for q in pending})
        full = resolve(task_id, tasks, "task") if any(t.startswith(task_id) for t in tasks) else task_id
        question = store.get(full, node_id)
        if question is None:
            raise UsageError(f"no question for step {node_id} of task {task_id} (see `saber approvals`)")
        if question.status != "pending":
            raise CLIError(f"step {node_id} of task {full} was already {question.status}")
        decided = store.decide(full, node_id, approve=approve, by="cli", reason=reason)
        if decided is None:
            raise CLIError(f"step {node_id} of task {full} was answered meanwhile")
        if approve and for_task:
            store.approve_tool_for_task(full, decided.tool, user_id=decided.user_id, by="cli")
    finally:
        store.db.close()
    verb = "approved" if approve else "denied"
    scope = f" ({decided.tool} approved for the rest of the task)" if approve and for_task else ""
    out().print(plain(f"{verb} step {node_id} of task {full}{scope}"))


def approve_command(
    task_id: Annotated[str, typer.Argument(help="The task (or a unique prefix of its id).", metavar="TASK")],
    node_id: Annotated[str, typer.Argument(help="The waiting step's id (see `saber approvals`).", metavar="NODE")],
    for_task: Annotated[bool, typer.Option("--for-task", help="Also approve this tool for the rest of the task.")] = False,
) -> None:
    """Approve a step that waits for your yes."""
    _answer(task_id, node_id, approve=True, reason="", for_task=for_task)


def deny_command(
    task_id: Annotated[str, typer.Argument(help="The task (or a unique prefix of its id).", metavar="TASK")],
    node_id: Annotated[str, typer.Argument(help="The waiting step's id (see `saber approvals`).", metavar="NODE")],
    reason: Annotated[str, typer.Option("--reason", help="Why (the answer tells the model).", metavar="TEXT")] = "",
) -> None:
    """Deny a step that waits for your yes: it fails as denied by the user."""
    _answer(task_id, node_id, approve=False, reason=reason, for_task=False)


def approvals_command(as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """List the steps waiting for a yes or no."""
    from rich.table import Table

    store = _store()
    try:
        pending = store.pending()
    finally:
        store.db.close()
    if as_json:
        print_json([q.to_dict() for q in pending])
        return
    if not pending:
        out().print("no step is waiting for approval", markup=False)
        return
    table = Table("task", "step", "tool", "why", "params")
    for q in pending:
        table.add_row(plain(q.task_id), plain(q.node_id), plain(q.tool), plain(q.reason), plain(str(q.params)[:120]))
    out().print(table)
