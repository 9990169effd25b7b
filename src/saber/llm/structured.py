"""Constrained decoding: the JSON Schema a reply must fit, in the form each backend understands.

- ``openai``: ``response_format: {"type": "json_schema", "json_schema": {...}}`` (OpenAI, and the
  OpenAI-compatible endpoints of many hosted providers);
- ``vllm``: ``structured_outputs: {"json": schema}`` (vLLM 0.10.2 and later; the ``guided_*``
  fields were removed in 0.12);
- ``vllm_guided``: ``guided_json: schema`` (older vLLM);
- ``ollama``: ``format: schema`` (Ollama's own field) with ``response_format`` json_schema beside
  it, which Ollama's ``/v1`` endpoint turns into the same ``format``;
- ``llamacpp``: ``json_schema: schema`` (llama.cpp's server turns it into a grammar itself);
- ``off``: nothing is sent;
- ``auto``: asked of the endpoint once, then remembered: ``GET /models`` names the server in
  ``owned_by`` (vLLM says "vllm", llama.cpp "llamacpp"); Ollama answers ``GET /api/version``;
  vLLM's ``GET /version`` says which vLLM field to use. Anything else gets the ``openai`` form.

A backend that refuses the constraint (a 400 or 422 naming it) is asked again without it, once,
with a warning; the refusal is remembered, so later requests do not send it again.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any, Literal, get_args

import httpx
import openai

from saber.llm.types import ResponseFormat

__all__ = ["FORMS", "StructuredForm", "StructuredOutput", "constraint_fields"]

StructuredForm = Literal["auto", "openai", "vllm", "vllm_guided", "ollama", "llamacpp", "off"]
FORMS: tuple[str, ...] = get_args(StructuredForm)

_log = logging.getLogger("saber.llm")
_STRUCTURED_OUTPUTS_SINCE = (0, 10, 2)
_REFUSAL_WORDS = ("response_format", "json_schema", "structured_outputs", "guided_json", "format", "schema",
                  "grammar", "unrecognized", "unknown field", "extra", "not supported", "unsupported")


def constraint_fields(form: str, response_format: ResponseFormat) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(top_level, extra_body)``: the request fields asking for ``response_format`` in ``form``.

    Top-level fields are ones the openai client takes as arguments; the rest go in ``extra_body``.
    """
    schema = response_format.schema
    openai_form = {"type": "json_schema", "json_schema": {"name": response_format.name, "schema": schema,
                                                          "strict": response_format.strict}}
    if form == "openai":
        return {"response_format": openai_form}, {}
    if form == "vllm":
        return {}, {"structured_outputs": {"json": schema}}
    if form == "vllm_guided":
        return {}, {"guided_json": schema}
    if form == "ollama":
        return {"response_format": openai_form}, {"format": schema}
    if form == "llamacpp":
        return {}, {"json_schema": schema}
    if form == "off":
        return {}, {}
    raise ValueError(f"unknown structured output form {form!r} (known: {', '.join(FORMS)})")


class StructuredOutput:
    """One endpoint's form of constrained decoding: chosen by a setting or detected, then kept."""

    def __init__(self, form: str = "openai", *, endpoint: str = "") -> None:
        if form not in FORMS:
            raise ValueError(f"unknown structured output form {form!r} (known: {', '.join(FORMS)})")
        self.setting = form
        self.form: str | None = None if form == "auto" else form
        """The form in use; None until ``auto`` has asked the endpoint."""
        self.endpoint = endpoint
        self.refused_with: str | None = None
        """The endpoint's error when it refused the constraint (nothing is sent after that)."""

    async def add(self, params: dict[str, Any], response_format: ResponseFormat | None, client: openai.AsyncOpenAI) -> bool:
        """Put the constraint into ``params`` (the ``create`` keyword arguments); True when any was added."""
        if response_format is None or self.refused_with is not None:
            return False
        form = self.form
        if form is None:
            form, answered = await detect_form(client)
            if answered:  # an endpoint that did not answer at all is asked again next time
                self.form = form
                _log.info("structured output for %s: %s form (detected)", self.endpoint, form)
        top, extra = constraint_fields(form, response_format)
        if not top and not extra:
            return False
        params.update(top)
        if extra:
            params["extra_body"] = {**params.get("extra_body", {}), **extra}
        return True

    def refused(self, exc: openai.APIStatusError) -> bool:
        """True when ``exc`` is the endpoint refusing the constraint: remembered, and warned about once."""
        if exc.status_code not in (400, 422):
            return False
        text = f"{exc.message} {exc.body}".lower()
        if not any(word in text for word in _REFUSAL_WORDS):
            return False
        self.refused_with = re.sub(r"\s+", " ", str(exc.message))[:200]
        _log.warning("%s refused constrained decoding in the %s form (%s); asking again without it, "
                     "and not sending it again", self.endpoint, self.form, self.refused_with)
        return True


async def detect_form(client: openai.AsyncOpenAI) -> tuple[str, bool]:
    """``(form, answered)``: the form an endpoint takes, from its answers (see the module
    docstring), ``openai`` when unsure; ``answered`` is False when the endpoint could not be reached."""
    owners: set[str] = set()
    answered = True
    try:
        page = await client.models.list()
        owners = {str(getattr(m, "owned_by", "") or "").lower() for m in page.data}
    except openai.APIConnectionError:
        answered = False
    except openai.OpenAIError:
        pass
    if not answered:
        return "openai", False
    root = re.sub(r"/v1/?$", "", str(client.base_url).rstrip("/"))
    headers = {"Authorization": f"Bearer {client.api_key}"} if client.api_key else {}
    async with httpx.AsyncClient(timeout=5.0, headers=headers) as http:
        if "vllm" in owners:
            return _vllm_form(await _get_json(http, f"{root}/version")), True
        if "llamacpp" in owners:
            return "llamacpp", True
        if "ollama" in owners or isinstance(await _get_json(http, f"{root}/api/version"), Mapping):
            return "ollama", True
    return "openai", True


def _vllm_form(version: Any) -> str:
    text = str(version.get("version", "")) if isinstance(version, Mapping) else ""
    numbers = tuple(int(n) for n in re.findall(r"\d+", text)[:3])
    if numbers and numbers < _STRUCTURED_OUTPUTS_SINCE:
        return "vllm_guided"
    return "vllm"


async def _get_json(http: httpx.AsyncClient, url: str) -> Any:
    try:
        response = await http.get(url)
        if response.status_code != 200:
            return None
        return response.json()
    except (httpx.HTTPError, ValueError):
        return None
