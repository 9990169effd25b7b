"""The ``saber`` command: ask, tasks, resume, tools, config, ingest, docs.

Every error a user can cause (an unknown option, an unreadable or invalid config, a model
endpoint that refuses) ends in one ``saber: error: …`` line on stderr and an exit code, never a
traceback: 1 failure, 2 usage (bad arguments, settings or input), 130 interrupted.

Startup is kept light: this module imports only typer and the small ``saber.cli`` helpers;
the agent, the stores, numpy, jieba, openai and the embedder load inside the command that needs
them (``tests/unit/core/test_cli_imports.py`` guards this). A command module is registered with
one line below (``app.command(...)(function)`` or ``app.add_typer(sub_app, name=...)``) and must
import nothing heavy at module level either.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from saber.cli.approvals import approvals_command, approve_command, deny_command
from saber.cli.db import db_app
from saber.cli.knowledge import docs_app, ingest_command
from saber.cli.mcp import mcp_app
from saber.cli.model_check import model_app
from saber.cli.output import (
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    CLIError,
    Interrupted,
    line,
    out,
    plain,
    print_error,
    print_json,
    write_raw,
)
from saber.cli.render import JsonRenderer, RichRenderer
from saber.cli.serve import serve_command
from saber.cli.worker import worker_command
from saber.redact import install_log_redaction

if TYPE_CHECKING:
    from saber.config import Settings
    from saber.events import Event

__all__ = ["CLIError", "app", "main"]

T = TypeVar("T")

app = typer.Typer(
    name="saber",
    help="Saber: an agent runtime that lets language models use tools.",
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _plain_argument_help() -> None:
    """typer 0.2x prints a Python type after every argument in help ("QUERY <str>", "PATH <list[Path]>");
    the argument's name and help say it better. Options already show their metavar only."""
    from typer import core

    argument = getattr(core, "TyperArgument", None)
    if argument is not None and hasattr(argument, "display_type_rich"):
        argument.display_type_rich = lambda self, ctx: None


_plain_argument_help()
app.command("ingest", help="Add files or folders to the knowledge base.")(ingest_command)
app.add_typer(docs_app, name="docs")
app.add_typer(db_app, name="db")
app.add_typer(model_app, name="model")
app.command("serve", help="Run the HTTP API: REST + SSE, and OpenAI-compatible /v1.")(serve_command)
app.command("worker", help="Run queued requests (distributed mode).")(worker_command)
app.command("approve", help="Approve a step that waits for your yes.")(approve_command)
app.command("deny", help="Deny a step that waits for your yes.")(deny_command)
app.command("approvals", help="List the steps waiting for a yes or no.")(approvals_command)
app.add_typer(mcp_app, name="mcp")


def _version(value: bool) -> None:
    if value:
        from saber import __version__

        write_raw(f"saber {__version__}")
        raise typer.Exit(0)


@app.callback(invoke_without_command=True)
def _root(
    ctx: typer.Context,
    version: Annotated[bool, typer.Option("--version", help="Print the version and exit.", is_eager=True,
                                          callback=_version)] = False,
) -> None:
    """Saber: an agent runtime that lets language models use tools."""
    if ctx.invoked_subcommand is None:  # bare ``saber``: the help, not an empty error
        write_raw(ctx.get_help())
        raise typer.Exit(0)


def _settings() -> Settings:
    from saber.config import ConfigError, Settings

    try:
        return Settings.load()
    except ConfigError as exc:
        raise CLIError(str(exc), EXIT_USAGE) from None


def _read_query(query: str) -> str:
    """``-`` reads the query from stdin (a file, a heredoc, another command's output)."""
    if query != "-":
        return query
    if sys.stdin is None or sys.stdin.isatty():
        raise CLIError("`saber ask -` reads the query from stdin, but stdin is a terminal: pipe the query in", EXIT_USAGE)
    try:
        return sys.stdin.read().strip()
    except UnicodeDecodeError as exc:
        raise CLIError(f"stdin is not UTF-8 text: {exc.reason} at byte {exc.start}", EXIT_USAGE) from None


def _check_length(settings: Settings, query: str) -> None:
    """The agent rejects a query over ``agent.max_query_chars`` too; saying so here costs no startup."""
    limit = getattr(getattr(settings, "agent", None), "max_query_chars", None)
    if isinstance(limit, int) and limit > 0 and len(query) > limit:
        raise CLIError(f"the query is {len(query):,} characters long; the maximum is {limit:,} (agent.max_query_chars)",
                       EXIT_USAGE)


@app.command()
def ask(
    query: Annotated[str, typer.Argument(help="What to ask; - reads it from stdin.", show_default=False, metavar="QUERY")],
    user: Annotated[str, typer.Option("--user", "-u", help="User id: history, memory and preferences are per user.", metavar="ID")] = "cli",
    mode: Annotated[str | None, typer.Option(help="Force a mode: chat, tool, rag or react.", show_default=False, metavar="MODE")] = None,
    tools: Annotated[str | None, typer.Option(help="Comma-separated tools to allow (e.g. get_time,get_weather).",
                                              show_default=False, metavar="NAMES")] = None,
    rag: Annotated[bool, typer.Option("--rag", help="Answer from the knowledge base.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON event per line, for scripts.")] = False,
) -> None:
    """Ask a question; progress and the answer stream as they come."""
    if mode is not None and mode not in ("chat", "tool", "rag", "react"):
        raise CLIError(f"unknown mode {mode!r}: use chat, tool, rag or react", EXIT_USAGE)
    selected = [t.strip() for t in tools.split(",") if t.strip()] if tools else None
    text = _read_query(query)
    settings = _settings()
    _check_length(settings, text)

    async def run() -> None:
        agent = _agent(settings)
        await _warn_mcp(agent)
        await _render(agent, agent.stream(text, user_id=user, mode=mode, selected_tools=selected, use_rag=rag or None),
                      as_json, model=settings.llm.model)

    asyncio.run(run())


async def _warn_mcp(agent: Any) -> None:
    """Connect the MCP servers; one that is not up is a warning line, and the rest goes on."""
    from saber.cli.output import err

    for s in await agent.start():
        if s["state"] not in ("ready", "disabled"):
            err().print(line(("warning", "yellow"), f" MCP server {s['name']} is {s['state']}: "
                             f"{s['error'] or 'not connected yet'}"))


async def _render(agent: Any, events: AsyncGenerator[Event, None], as_json: bool, *, model: str | None = None) -> None:
    """Print a request's events; a failed request (``cli.outcome``) makes the exit code 1, bad
    input 2, Ctrl-C 130. ``model`` is the configured model, if any."""
    from saber.cli.outcome import Outcome

    renderer: JsonRenderer | RichRenderer = JsonRenderer() if as_json else RichRenderer(model=model)
    outcome = Outcome(model=model)
    try:
        async with contextlib.aclosing(events) as stream:  # closed here whatever ends the loop
            async for event in stream:
                renderer.render(event.type, event.data, event.to_dict())
                outcome.note(event.type, event.data)
                if event.type == "approval_required" and not as_json and sys.stdin.isatty():
                    await _ask_approval(agent, event.data)
    except SystemExit:  # stdout's reader left (``saber ask … | head -1``): rich has silenced it; stop quietly
        await asyncio.shield(_close_now(agent))
        raise
    except ValueError as exc:
        await agent.aclose()
        raise CLIError(str(exc), EXIT_USAGE) from None
    except asyncio.CancelledError:  # Ctrl-C: leave now, without waiting for background extraction
        await asyncio.shield(_close_now(agent))
        state = renderer.state
        raise Interrupted(state.task_id if state.resumable else None) from None
    except Exception as exc:
        from saber.tools.errors import ToolError

        await agent.aclose()
        if isinstance(exc, ToolError):
            raise CLIError(str(exc), EXIT_USAGE) from None
        raise
    await agent.aclose()
    failure = outcome.failure()
    if failure is not None:
        raise CLIError(failure, 1)


async def _ask_approval(agent: Any, question: dict[str, Any]) -> None:
    """The terminal's prompt for a waiting step (other steps keep running meanwhile)."""
    from saber.cli.output import err

    prompt = f"approve {question['tool']} for step {question['node_id']}? [y]es / [n]o / [a]lways this task: "
    while True:
        err().print(plain(f"{question['reason']}: {question['params']}"))
        answer = (await asyncio.to_thread(input, prompt)).strip().lower()
        if answer in ("y", "yes", "n", "no", "a", "always"):
            break
    approve = answer[0] in "ya"
    reason = "" if approve else (await asyncio.to_thread(input, "why (optional): ")).strip()
    await agent.approvals.decide(question["task_id"], question["node_id"], approve=approve, by="cli", reason=reason,
                                 for_task=answer[0] == "a")


async def _close_now(agent: Any) -> None:
    try:
        await agent.aclose(grace=0)
    except Exception:  # closing after Ctrl-C must not hide the interruption
        logging.getLogger(__name__).debug("closing after Ctrl-C failed", exc_info=True)


@app.command()
def tasks(
    all_tasks: Annotated[bool, typer.Option("--all", help="Also list finished tasks.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List checkpointed react tasks; unfinished ones (interrupted, or cancelled) can be resumed."""
    from rich.table import Table

    from saber.cli.ids import shortest_unique

    settings = _settings()
    found: list[dict[str, Any]] = _with_agent(settings, lambda agent: agent.tasks(unfinished=not all_tasks))
    from saber.runs.status import reported_status

    records = _queue_statuses(settings, [t["task_id"] for t in found])
    for t in found:
        t["state"] = reported_status(records.get(t["task_id"]), t.get("state", t["status"]))
    if as_json:
        print_json(found)
        return
    if not found:
        out().print("no unfinished tasks" if not all_tasks else "no tasks", markup=False)
        return
    short = shortest_unique(t["task_id"] for t in found)
    table = Table("task", "status", "user", "steps", "request")
    table.columns[0].no_wrap = True
    for t in found:
        table.add_row(plain(short[t["task_id"]]), plain(t["state"]), plain(t["user_id"]), plain(_steps(t)),
                      plain(t.get("title") or t["query"]))
    out().print(table)


def _queue_statuses(settings: Any, task_ids: list[str]) -> dict[str, str]:
    """The distributed mode: what the run queue says of these tasks (a run a worker holds, or one
    whose worker is gone and that another takes over), which the listing reports over the checkpoint."""
    from saber.cluster.signals import distributed

    if not distributed(settings):
        return {}
    from saber.cluster.runtime import queue_statuses

    try:
        return queue_statuses(settings, task_ids)
    except Exception as exc:  # the queue cannot be read: list what the checkpoints say
        logging.getLogger(__name__).warning("reading the run queue failed: %s", exc)
        return {}


def _steps(task: dict[str, Any]) -> str:
    """"2 done, 1 failed, 1 skipped of 4" (failed and skipped steps are not counted as done)."""
    if "done" not in task:
        return f"{task['finished']}/{task['nodes']}"
    parts = [f"{task['done']} done"] + [f"{task[k]} {k}" for k in ("failed", "skipped") if task.get(k)]
    cut = task.get("plan_truncated")
    lost = f" (plan cut: {cut.get('dropped_nodes', 0)} dropped)" if isinstance(cut, dict) else ""
    return f"{', '.join(parts)} of {task['nodes']}{lost}"


@app.command()
def resume(
    task_id: Annotated[str, typer.Argument(help="The task to continue, or a unique prefix of its id (see `saber tasks`).",
                                           show_default=False, metavar="TASK_ID")],
    as_json: Annotated[bool, typer.Option("--json", help="One JSON event per line, for scripts.")] = False,
) -> None:
    """Continue a react task from its checkpoint: finished steps are not run again."""
    from saber.cli.ids import resolve

    settings = _settings()

    async def run() -> None:
        agent = _agent(settings)
        known = [t["task_id"] for t in await agent.tasks(unfinished=False)]
        try:  # an unknown id is a failure (exit 1), like an unknown document; an ambiguous one usage (2)
            full = resolve(task_id, known, "task")
        except CLIError as exc:
            await agent.aclose()
            if exc.code == EXIT_USAGE:
                raise
            raise CLIError(f"no resumable task {task_id.strip()!r} (see `saber tasks`)") from None
        await _render(agent, agent.resume(full), as_json, model=settings.llm.model)  # a finished task, another user's: the agent says why

    asyncio.run(run())


def _agent(settings: Settings) -> Any:
    """An Agent, or a one-line error naming what in the settings or the data folder is wrong."""
    from saber.agent import Agent
    from saber.agent.memory.store import MemoryStoreError
    from saber.rag.documents import RagError

    try:
        return Agent(settings)
    except (ValueError, RagError, MemoryStoreError) as exc:
        raise CLIError(f"cannot start: {exc}", EXIT_USAGE) from None
    except OSError as exc:
        raise CLIError(f"cannot start: {_os_error(exc)}", EXIT_USAGE) from None


def _os_error(exc: OSError) -> str:
    """"/a/file: not a folder" rather than ``FileExistsError: [Errno 17] …``."""
    where = exc.filename if exc.filename is not None else ""
    reason = exc.strerror or str(exc)
    if isinstance(exc, (FileExistsError, NotADirectoryError)):
        reason = "exists and is not a folder (check SABER_HOME)"
    return f"{where}: {reason}" if where else reason


def _with_agent(settings: Settings, use: Callable[[Any], Awaitable[T]]) -> T:
    """Run ``use(agent)`` on a fresh agent, closing it afterwards."""

    async def run() -> T:
        agent = _agent(settings)
        try:
            return await use(agent)
        finally:
            await agent.aclose()

    return asyncio.run(run())


@app.command("tools")
def list_tools(as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """List the tools the agent can use, with their parameters."""
    from rich.table import Table

    settings = _settings()

    async def describe(agent: Any) -> list[dict[str, Any]]:
        await _warn_mcp(agent)
        return [t.to_dict() for t in agent.registry.snapshot().values()]

    described = _with_agent(settings, describe)
    if as_json:
        print_json(described)
        return
    table = Table("tool", "parameters", "description", show_lines=False)
    for t in described:
        params = ", ".join(f"{p['name']}({p['type']}{', required' if p['required'] else ''})" for p in t["parameters"]) or "—"
        table.add_row(plain(t["name"]), plain(params), plain(t["description"].splitlines()[0] if t["description"] else ""))
    out().print(table)


@app.command("config")
def show_config(as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """Show the effective settings by section (secrets masked) and where each comes from: default, file or env."""
    import json

    from saber.cli.sources import setting_sources
    from saber.config import config_path

    settings = _settings()
    shown = settings.masked()
    sources = setting_sources(settings)
    path = config_path(settings.home)
    from saber.tools.system import system_notes

    notes = system_notes(settings)
    if as_json:
        print_json({"config_file": str(path), "config_file_exists": path.is_file(), "settings": shown, "sources": sources,
                    "notes": notes})
        return
    out().print(f"config file: {path}{'' if path.is_file() else ' (not present)'}", markup=False)
    for section, values in shown.items():  # as saber.toml is written: home, then a [table] per section
        if not isinstance(values, dict):
            out().print(line(f"{section} = {json.dumps(values, ensure_ascii=False, default=str)}  ",
                             (f"({sources.get(section, 'default')})", "dim")))
            continue
        out().print(f"[{section}]", markup=False)
        for key, value in values.items():
            out().print(line(f"{key} = {json.dumps(value, ensure_ascii=False, default=str)}  ",
                             (f"({sources.get(f'{section}.{key}', 'default')})", "dim")))
    for note in notes:
        out().print(line(("note: ", "yellow"), note))


LONG_LIVED = frozenset({"serve", "worker", "mcp"})
"""Commands that keep running (``mcp`` for ``mcp serve``): their databases get the engine's pool.
Every other command runs once and exits: ``saber.db.one_shot`` (no pool, no SQLAlchemy for SQLite)."""


def _command(args: Sequence[str]) -> str | None:
    return next((a for a in args if not a.startswith("-")), None)


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point: run the CLI and turn every user error into one line and an exit code."""
    from saber.db.oneshot import one_shot

    logging.basicConfig(level=logging.ERROR, format="saber: %(levelname)s: %(message)s")
    logging.getLogger("saber.config").setLevel(logging.WARNING)  # a setting spelled the old way says so
    install_log_redaction()  # no secret from a query or a tool result in any log line
    args = list(argv) if argv is not None else sys.argv[1:]
    try:
        with one_shot(_command(args) not in LONG_LIVED):
            code = app(args=args, standalone_mode=False)
        if code == EXIT_INTERRUPTED:  # typer turns a Ctrl-C a command did not catch into Exit(130), silently
            raise Interrupted()
        if isinstance(code, int) and code:  # a typer.Exit(code) inside a command comes back as the return value
            sys.exit(code)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except CLIError as exc:
        print_error(str(exc))
        sys.exit(exc.code)
    except (Interrupted, KeyboardInterrupt, typer.Abort) as exc:
        sys.stderr.write((exc if isinstance(exc, Interrupted) else Interrupted()).line() + "\n")
        sys.exit(EXIT_INTERRUPTED)
    except Exception as exc:
        sys.exit(_unexpected(exc))


def _unexpected(exc: Exception) -> int:
    """Click's usage errors, a bad config, a broken pipe, or a bug: still one line (SABER_DEBUG=1 for the traceback)."""
    from saber.config import ConfigError

    if type(exc).__name__ == "NoArgsIsHelpError":  # ``saber docs``: a command group's help, as help
        sys.stderr.write(exc.format_message().rstrip() + "\n")  # type: ignore[attr-defined]
        return EXIT_USAGE
    if isinstance(exc, typer.TyperException):  # typer's own click: unknown option or command, bad value
        print_error(exc.format_message())
        return exc.exit_code if exc.exit_code else EXIT_USAGE
    db = sys.modules.get("saber.db.database")  # loaded if it raised: a database the settings name is unusable
    if isinstance(exc, ConfigError) or (db is not None and isinstance(exc, db.DatabaseError)):
        print_error(str(exc))
        return EXIT_USAGE
    if isinstance(exc, BrokenPipeError):  # ``saber docs list | head``: the reader left, nothing to report
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    if os.environ.get("SABER_DEBUG"):
        raise exc
    print_error(f"{type(exc).__name__}: {exc}")
    return 1


if __name__ == "__main__":
    main()
