"""Approvals: a person says yes before a risky step runs (durable questions, answers from the
CLI, the API or the web page). The runtime's side is ``saber.graph.approval``. Names load on
first use, so ``saber approve`` and ``saber --help`` stay light."""

from typing import Any

__all__ = ["ApprovalBroker", "ApprovalStore", "Question", "UserGate"]

_HOMES = {"ApprovalBroker": "saber.approvals.broker", "UserGate": "saber.approvals.broker",
          "ApprovalStore": "saber.approvals.store", "Question": "saber.approvals.store"}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(home), name)
