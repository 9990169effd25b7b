"""The error a run's owner answers with: an HTTP status, a code and a message (the server renders
it in its one error shape: ``saber.server.errors``)."""

from __future__ import annotations

from collections.abc import Mapping


class ApiError(Exception):
    """An answer other than success: raised anywhere in a route or a run manager, rendered by the
    handler in ``saber.server.errors``."""

    def __init__(self, status: int, code: str, message: str, *, headers: Mapping[str, str] | None = None,
                 param: str | None = None) -> None:
        """``param``: the request field at fault, for the OpenAI-compatible routes' error shape."""
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = dict(headers or {})
        self.param = param
