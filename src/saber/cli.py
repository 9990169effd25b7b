"""The ``saber`` command: ask, tools, config, ingest, docs.

Every error a user can cause (an unknown option, an unreadable or invalid config, a model
endpoint that refuses) ends in one line on stderr and a non-zero exit, never a traceback.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from saber.agent.memory.store import MemoryStoreError
from saber.config import ConfigError, Settings, config_path
from saber.events import Event
from saber.rag.cli import docs_app, ingest_command
from saber.rag.documents import RagError
from saber.server.serve import serve_command
from saber.tools.errors import ToolError

T = TypeVar("T")

app = typer.Typer(
    name="saber",
    help="Saber: an agent runtime that lets language models use tools.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.command("ingest", help="Add files or folders to the knowledge base.")(ingest_command)
app.add_typer(docs_app, name="docs")
app.command("serve", help="Run the HTTP API: REST + SSE, and OpenAI-compatible /v1.")(serve_command)

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)


class CLIError(Exception):
    """An error to print in one line before exiting with ``code``."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def _settings() -> Settings:
    try:
        return Settings.load()
    except ConfigError as exc:
        raise CLIError(str(exc), 2) from None


@app.command()
def ask(
    query: Annotated[str, typer.Argument(help="What to ask.")],
    user: Annotated[str, typer.Option("--user", "-u", help="User id: history, memory and preferences are per user.")] = "cli",
    mode: Annotated[str | None, typer.Option(help="Force a mode: chat, tool, rag or react.")] = None,
    tools: Annotated[str | None, typer.Option(help="Comma-separated tools to allow (e.g. get_time,get_weather).")] = None,
    rag: Annotated[bool, typer.Option("--rag", help="Answer from the knowledge base.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON event per line, for scripts.")] = False,
) -> None:
    """Ask a question; progress and the answer stream as they come."""
    if mode is not None and mode not in ("chat", "tool", "rag", "react"):
        raise CLIError(f"unknown mode {mode!r}: use chat, tool, rag or react", 2)
    selected = [t.strip() for t in tools.split(",") if t.strip()] if tools else None
    settings = _settings()
    asyncio.run(_ask(settings, query, user=user, mode=mode, selected=selected, use_rag=rag or None, as_json=as_json))


async def _ask(settings: Settings, query: str, *, user: str, mode: Any, selected: list[str] | None,
               use_rag: bool | None, as_json: bool) -> None:
    agent = _agent(settings)
    await _render(agent, agent.stream(query, user_id=user, mode=mode, selected_tools=selected, use_rag=use_rag), as_json)


async def _render(agent: Any, events: AsyncIterator[Event], as_json: bool) -> None:
    """Print a request's events; a model error makes the exit code 1, bad input 2."""
    renderer = _JsonRenderer() if as_json else _RichRenderer()
    model_errors: list[str] = []
    try:
        async for event in events:
            renderer.render(event)
            if event.type == "error":
                model_errors.append(str(event.data["message"]))
    except (ValueError, ToolError) as exc:
        await agent.aclose()
        raise CLIError(str(exc), 2) from None
    except asyncio.CancelledError:  # Ctrl-C: leave now, without waiting for background extraction
        await agent.aclose(grace=0)
        raise
    await agent.aclose()
    if model_errors:
        raise CLIError(model_errors[0], 1)


@app.command()
def tasks(
    all_tasks: Annotated[bool, typer.Option("--all", help="Also list finished tasks.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List checkpointed react tasks; unfinished ones (the process died, or cancelled) can be resumed."""
    settings = _settings()

    found: list[dict[str, Any]] = _with_agent(settings, lambda agent: agent.tasks(unfinished=not all_tasks))
    if as_json:
        _print_json(found)
        return
    if not found:
        out.print("no unfinished tasks" if not all_tasks else "no tasks", markup=False)
        return
    table = Table("task", "status", "user", "steps done", "query")
    for t in found:
        table.add_row(t["task_id"], t["status"], str(t["user_id"]), f"{t['finished']}/{t['nodes']}", str(t["query"]))
    out.print(table)


@app.command()
def resume(
    task_id: Annotated[str, typer.Argument(help="The task to continue (see `saber tasks`).")],
    as_json: Annotated[bool, typer.Option("--json", help="One JSON event per line, for scripts.")] = False,
) -> None:
    """Continue a react task from its checkpoint: finished steps are not run again."""
    settings = _settings()

    async def run() -> None:
        agent = _agent(settings)
        await _render(agent, agent.resume(task_id), as_json)

    asyncio.run(run())


def _agent(settings: Settings) -> Any:
    """An Agent, or a one-line error naming what in the settings or the data folder is wrong."""
    from saber.agent import Agent

    try:
        return Agent(settings)
    except (ValueError, OSError, RagError, MemoryStoreError) as exc:
        raise CLIError(f"cannot start: {exc}", 2) from None


def _with_agent(settings: Settings, use: Callable[[Any], Awaitable[T]]) -> T:
    """Run ``use(agent)`` on a fresh agent, closing it afterwards."""

    async def run() -> T:
        agent = _agent(settings)
        try:
            return await use(agent)
        finally:
            await agent.aclose()

    return asyncio.run(run())


def _print_json(data: Any) -> None:
    out.print(json.dumps(data, ensure_ascii=False, indent=2), markup=False)


class _JsonRenderer:
    def render(self, event: Event) -> None:
        out.print(json.dumps(event.to_dict(), ensure_ascii=False, default=str), markup=False)


class _RichRenderer:
    """Progress lines on stderr, the answer on stdout (so ``saber ask ... > answer.txt`` works)."""

    def __init__(self) -> None:
        self.streaming = False

    def render(self, event: Event) -> None:
        data = event.data
        kind = event.type
        if kind == "token":
            self.streaming = True
            out.print(data["content"], end="", markup=False)
            return
        if kind == "done":
            if self.streaming:
                out.print()
            extra = f" · {data['usage'].get('total_tokens', 0)} tokens" if data["usage"].get("total_tokens") else ""
            who = data["model"] or "no language model"
            err.print(f"[dim]— {data['mode']} · {who}{extra}{' · interrupted' if data['interrupted'] else ''}[/]")
            return
        line = _progress_line(kind, data)
        if line:
            err.print(line)


def _progress_line(kind: str, data: dict[str, Any]) -> str | None:
    if kind == "route":
        return f"[cyan]route[/] {data['mode']} [dim]({escape(data['rule'])})[/]"
    if kind == "plan":
        steps = ", ".join(f"{n['id']}:{n['tool'] or n['agent']}" for n in data["nodes"]) or "no steps"
        warn = f" [yellow]({len(data['warnings'])} warning(s))[/]" if data["warnings"] else ""
        return f"[cyan]plan[/] [dim]{data['source']}/{data['format']}[/] {escape(steps)}{warn}"
    if kind == "node_start":
        return f"[blue]▶[/] {data['id']} {data['tool']}" + (f" [dim](attempt {data['attempt']})[/]" if data["attempt"] > 1 else "")
    if kind == "node_done":
        colour = {"done": "green", "failed": "red", "skipped": "yellow", "cancelled": "yellow"}.get(data["status"], "white")
        why = f" [dim]{escape(str(data['error'])[:160])}[/]" if data.get("error") else ""
        return f"[{colour}]■[/] {data['id']} {data['tool']} {data['status']} [dim]{data['duration_ms']:.0f} ms[/]{why}"
    if kind == "race_won":
        return f"[magenta]race[/] {data['race_group']}: {data['winner']} ({data['tool']}) won"
    if kind == "tool_call":
        shown = data["tool_result"] if data.get("error") is None else f"error: {data['error']}"
        return f"[cyan]tool[/] {data['tool_name']}({escape(json.dumps(data['params'], ensure_ascii=False))}) → {escape(str(shown)[:200])}"
    if kind == "rag_result":
        return f"[cyan]knowledge base[/] {len(data['hits'])} hit(s) for {escape(data['query'])!r}"
    if kind == "memory":
        return f"[dim]memory {data['action']}: {escape(data['content'] or '')} {escape(data['reason'] or '')}[/]"
    if kind == "error":
        return f"[red]error[/] [dim]({data['where']})[/] {escape(data['message'])}"
    if kind == "replan":
        return f"[cyan]replan[/] +{len(data['added'])} ({escape(data['reason'])})"
    return None


@app.command("tools")
def list_tools(as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """List the tools the agent can use, with their parameters."""
    settings = _settings()

    async def describe(agent: Any) -> list[dict[str, Any]]:
        return [t.to_dict() for t in agent.registry.snapshot().values()]

    described = _with_agent(settings, describe)
    if as_json:
        _print_json(described)
        return
    table = Table("tool", "parameters", "description", show_lines=False)
    for t in described:
        params = ", ".join(f"{p['name']}({p['type']}{', required' if p['required'] else ''})" for p in t["parameters"]) or "—"
        table.add_row(t["name"], params, t["description"].splitlines()[0] if t["description"] else "")
    out.print(table)


@app.command("config")
def show_config(as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """Show the effective settings (secrets masked) and where they come from."""
    settings = _settings()
    shown = settings.masked()
    if as_json:
        out.print(json.dumps({"config_file": str(config_path(settings.home)), "settings": shown}, ensure_ascii=False,
                             indent=2), markup=False)
        return
    path = config_path(settings.home)
    out.print(f"config file: {path}{'' if path.is_file() else ' (not present)'}", markup=False)
    for key, value in shown.items():
        out.print(f"{key} = {json.dumps(value, ensure_ascii=False)}", markup=False)


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point: run the CLI and turn every user error into one line and an exit code."""
    logging.basicConfig(level=logging.ERROR, format="saber: %(levelname)s: %(message)s")
    try:
        code = app(args=list(argv) if argv is not None else None, standalone_mode=False)
        if isinstance(code, int) and code:  # a typer.Exit(code) inside a command comes back as the return value
            sys.exit(code)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.TyperException as exc:
        err.print(f"saber: error: {exc.format_message()}", markup=False)
        sys.exit(exc.exit_code if exc.exit_code else 2)
    except typer.Abort:
        err.print("saber: aborted", markup=False)
        sys.exit(130)
    except CLIError as exc:
        err.print(f"saber: error: {exc}", markup=False)
        sys.exit(exc.code)
    except ConfigError as exc:
        err.print(f"saber: error: {exc}", markup=False)
        sys.exit(2)
    except KeyboardInterrupt:
        err.print("saber: interrupted", markup=False)
        sys.exit(130)
    except Exception as exc:  # a bug, or a failure nothing above names: still one line (SABER_DEBUG=1 for the traceback)
        if os.environ.get("SABER_DEBUG"):
            raise
        err.print(f"saber: error: {type(exc).__name__}: {exc}", markup=False)
        sys.exit(1)


if __name__ == "__main__":
    main()
