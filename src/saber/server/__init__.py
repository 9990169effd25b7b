"""Saber over HTTP: ``create_app`` builds the FastAPI app that ``saber serve`` runs."""

from typing import Any

__all__ = ["create_app"]


def __getattr__(name: str) -> Any:
    """``create_app`` loads FastAPI and the agent on first use: ``saber --help`` must not."""
    if name == "create_app":
        from saber.server.app import create_app

        return create_app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
