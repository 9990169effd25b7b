"""``saber model check``: probe the configured model endpoint and say what Saber will use.

Mounted by the main CLI as ``app.add_typer(model_app, name="model")``.
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

if TYPE_CHECKING:
    from saber.config import Settings
    from saber.llm.check import CheckReport

model_app = typer.Typer(help="Check the configured language model.", no_args_is_help=True)
_out = Console(highlight=False, soft_wrap=True)
_err = Console(stderr=True, highlight=False, soft_wrap=True)


@model_app.command("check")
def check(
    timeout: Annotated[float, typer.Option(help="Seconds each probe may take.", min=0.1)] = 30.0,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Probe the endpoint: reachable, model name, streaming, tool calls, structured output, speed, context."""
    from saber.config import ConfigError, Settings
    from saber.llm.nomodel import NO_MODEL_MESSAGE

    try:
        settings = Settings.load()
    except ConfigError as exc:
        _err.print(f"saber: error: {exc}", markup=False)
        raise typer.Exit(2) from None
    if not settings.llm.model:
        _err.print(f"saber: error: {NO_MODEL_MESSAGE}", markup=False)
        raise typer.Exit(2)
    report = asyncio.run(_run(settings, timeout))
    if as_json:
        _out.print(json.dumps(report.to_dict(), ensure_ascii=False, indent=2), markup=False)
    else:
        for line in render(report, settings):
            _out.print(line, markup=False)
    if not report.reachable:
        raise typer.Exit(1)


async def _run(settings: Settings, probe_seconds: float) -> CheckReport:
    from saber.llm.check import check_endpoint
    from saber.llm.openai_compat import OpenAIChatModel

    key = settings.llm.api_key.get_secret_value() if settings.llm.api_key is not None else None
    model = OpenAIChatModel(str(settings.llm.model), base_url=settings.llm.base_url, api_key=key or None,
                            timeout=min(probe_seconds, settings.llm.timeout))
    async with model:
        return await check_endpoint(model, probe_seconds=probe_seconds)


def render(report: CheckReport, settings: Settings) -> list[str]:
    """The report as lines of text."""
    from saber.llm.limits import PURPOSES, limits_from_settings

    lines = [f"endpoint: {report.endpoint}", f"model: {report.model}"
             + (f" (the server answers as {report.served_model})" if report.served_model and report.served_model != report.model else "")]
    for name, probe in report.probes.items():
        lines.append(f"  {'ok ' if probe.ok else 'no '} {name:<12} {probe.detail} ({probe.seconds:.2f}s)")
    if not report.reachable:
        lines.append("The endpoint did not answer: check SABER_LLM_BASE_URL, SABER_LLM_API_KEY and that the server runs.")
        return lines
    lines.append(f"tokens per second: {report.tokens_per_second if report.tokens_per_second is not None else 'unknown'}")
    lines.append(f"context length: {report.context_length if report.context_length is not None else 'unknown (the server does not say)'}")
    lines.append("Saber will use:")
    lines.extend(f"  {what}: {how}" for what, how in report.uses().items())
    limits = limits_from_settings(settings)
    lines.append("  max_tokens: " + ", ".join(f"{p} {limits[p].max_tokens}" for p in PURPOSES)
                 + f"; {settings.llm.timeout:g}s per call, {settings.agent.request_deadline:g}s per request")
    if report.tokens_per_second and report.tokens_per_second * settings.llm.timeout < limits["answer"].max_tokens:
        lines.append(f"  note: at {report.tokens_per_second} tokens/s an answer of {limits['answer'].max_tokens} tokens takes "
                     f"longer than llm.timeout ({settings.llm.timeout:g}s); long answers will be cut")
    return lines
