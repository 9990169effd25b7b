"""Approvals: a person says yes before a risky step runs (durable questions, answers from the
CLI, the API or the web page). The runtime's side is ``saber.graph.approval``."""

from saber.approvals.broker import ApprovalBroker, UserGate
from saber.approvals.store import ApprovalStore, Question

__all__ = ["ApprovalBroker", "ApprovalStore", "Question", "UserGate"]
