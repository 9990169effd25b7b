"""The agent: routing, the four modes, sub-agents, memory and the request lifecycle."""

from saber.agent.agent import Agent, Answer
from saber.agent.router import RouteDecision, RouteOptions, route

__all__ = ["Agent", "Answer", "RouteDecision", "RouteOptions", "route"]
