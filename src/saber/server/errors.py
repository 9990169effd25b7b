"""Every error the API answers has one shape: ``{"error": {"code", "message"}, "request_id"}``.

Under ``/v1`` (the OpenAI-compatible routes) the error also carries OpenAI's ``type``
(``invalid_request_error``, or ``server_error`` for a 5xx) and ``param`` (the field at fault, or null).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from saber.runs.errors import ApiError as ApiError  # the routes raise it from here

log = logging.getLogger(__name__)


class ErrorDetail(BaseModel):
    code: str
    message: str


class ErrorBody(BaseModel):
    error: ErrorDetail
    request_id: str


class OpenAIErrorDetail(ErrorDetail):
    type: str = Field(description="invalid_request_error, or server_error for a 5xx (as OpenAI's).")
    param: str | None = Field(description="The request field at fault, if one is (as OpenAI's).")


class OpenAIErrorBody(BaseModel):
    """An error of the OpenAI-compatible routes (``/v1``)."""

    error: OpenAIErrorDetail
    request_id: str


SHOWN_CHARS = 200
"""How much of what a client sent an error message repeats (a 5,000-character id is not echoed whole)."""


def shown(value: str) -> str:
    """``value`` quoted for a message, its start only when it is long."""
    if len(value) <= SHOWN_CHARS:
        return repr(value)
    return f"{value[:SHOWN_CHARS]!r}… ({len(value):,} characters)"


def not_found(what: str) -> ApiError:
    return ApiError(404, "not_found", f"{what} not found")


_UNPARSED = "There was an error parsing the body"
"""FastAPI's 400 for a JSON body it could not decode for another reason than its syntax."""


def _unparsed(cause: BaseException | None) -> str:
    if isinstance(cause, UnicodeDecodeError):
        return f"body: not UTF-8 text (byte {cause.object[cause.start]:#04x} at position {cause.start})"
    if isinstance(cause, RecursionError):
        return "body: malformed JSON (nested too deeply)"
    return f"body: malformed JSON ({type(cause).__name__ if cause else 'cannot be parsed'})"


def request_id_of(scope_or_request: Any) -> str:
    scope = scope_or_request.scope if hasattr(scope_or_request, "scope") else scope_or_request
    return str(scope.get("state", {}).get("request_id", ""))


def error_response(status: int, code: str, message: str, request_id: str,
                   headers: Mapping[str, str] | None = None, *, openai: bool = False,
                   param: str | None = None) -> JSONResponse:
    """``openai``: add OpenAI's ``type`` and ``param`` (``param``: the field at fault)."""
    error: dict[str, Any] = {"code": code, "message": message}
    if openai:
        error.update(type="server_error" if status >= 500 else "invalid_request_error", param=param)
    return JSONResponse({"error": error, "request_id": request_id}, status_code=status, headers=dict(headers or {}))


def _openai(request: Request) -> bool:
    return request.url.path.startswith("/v1/")


def _first_field(errors: Sequence[Any]) -> str | None:
    loc = [str(p) for p in (errors[0].get("loc", ()) if errors else ()) if p != "body"]
    return ".".join(loc) or None


def describe_validation(errors: Sequence[Any]) -> str:
    """``body.message: Field required; body.mode: Input should be 'chat', ...`` — every bad field named."""
    parts = []
    for e in errors:
        loc = ".".join(str(p) for p in e.get("loc", ()) if p != "body") or "body"
        msg = str(e.get("msg", "invalid"))
        if e.get("type") == "json_invalid":
            ctx = e.get("ctx") or {}
            msg = f"malformed JSON ({ctx.get('error', 'cannot be parsed')})"
            loc = "body"
        elif e.get("type") == "model_attributes_type" and loc == "body":
            msg = "expected a JSON object (send Content-Type: application/json)"
        parts.append(f"{loc}: {msg}")
    return "; ".join(parts) or "invalid request"


_STATUS_CODES = {400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found",
                 405: "method_not_allowed", 406: "not_acceptable", 409: "conflict", 413: "too_large",
                 415: "unsupported_media_type", 429: "too_many_requests"}


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> JSONResponse:
        return error_response(exc.status, exc.code, exc.message, request_id_of(request), exc.headers,
                              openai=_openai(request), param=exc.param)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        return error_response(422, "invalid_request", describe_validation(exc.errors()), request_id_of(request),
                              openai=_openai(request), param=_first_field(exc.errors()))

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 400 and exc.detail == _UNPARSED:  # named, and answered as malformed JSON is
            return error_response(422, "invalid_request", _unparsed(exc.__cause__), request_id_of(request),
                                  openai=_openai(request))
        code = _STATUS_CODES.get(exc.status_code, "error")
        headers = dict(exc.headers or {})
        return error_response(exc.status_code, code, str(exc.detail), request_id_of(request), headers,
                              openai=_openai(request))

    @app.exception_handler(Exception)
    async def _bug(request: Request, exc: Exception) -> JSONResponse:
        log.exception("request %s failed", request_id_of(request))
        return error_response(500, "internal_error", f"internal error ({type(exc).__name__}); see the server log",
                              request_id_of(request), openai=_openai(request))


def _error_responses(model: type[BaseModel]) -> dict[int | str, dict[str, Any]]:
    return {status: {"model": model, "description": code.replace("_", " ")}
            for status, code in ((400, "bad_request"), (401, "unauthorized"), (403, "forbidden"), (404, "not_found"),
                                 (409, "conflict"), (413, "too_large"), (422, "invalid_request"),
                                 (429, "too_many_requests"), (503, "shutting_down_or_starting"))}


ERROR_RESPONSES = _error_responses(ErrorBody)
"""The error answers every API route may give, for the OpenAPI document."""

OPENAI_ERROR_RESPONSES = _error_responses(OpenAIErrorBody)
"""The same for the OpenAI-compatible routes, whose errors also carry ``type`` and ``param``."""
