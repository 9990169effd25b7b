"""Saber over HTTP: ``create_app`` builds the FastAPI app that ``saber serve`` runs."""

from saber.server.app import create_app

__all__ = ["create_app"]
