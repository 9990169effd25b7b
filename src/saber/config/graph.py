"""``GraphConfig``: how a task graph is run (parallelism, attempts, timeouts, races, replans).

It is the ``[graph]`` section of the settings itself: ``Settings.graph`` is a ``GraphConfig``
(read from ``saber.toml``'s ``[graph]`` table and ``SABER_GRAPH_*`` variables, validated by
pydantic with the constraints annotated on each field), so there is one definition of every graph
setting and its default. Built by hand (``GraphConfig(max_parallel=3)``) it is a plain frozen
dataclass, checked by ``_check``. Every duration is in seconds.

It lives with the settings, below the runtime that reads it, so ``Settings`` does not import the
graph package.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import ConfigDict, Field

if TYPE_CHECKING:
    from saber.config import Settings

FailurePolicy = Literal["skip", "continue"]

_SECONDS = ("retry_delay", "retry_max_delay", "step_timeout", "sub_agent_timeout", "race_timeout")
_LEGACY_MS = {f"{name}_ms": name for name in (*_SECONDS, "hedge")}
"""Names before 0.2, in milliseconds: accepted (with a DeprecationWarning) and converted."""


@dataclass(frozen=True, kw_only=True, init=False)
class GraphConfig:
    """How ``GraphRuntime`` runs a graph: parallelism, attempts and backoff, timeouts, races,
    replanning and the size of a node's result. Frozen; durations in seconds.

    ``settings.graph`` is the one an ``Agent`` uses; a default ``GraphConfig()`` is a default
    ``Settings().graph``.
    """

    __pydantic_config__ = ConfigDict(extra="forbid", allow_inf_nan=False)
    """How pydantic reads the section from the settings file and variables (unknown keys refused)."""

    max_parallel: Annotated[int, Field(ge=1)] = 8
    """Upper bound on tool / sub-agent attempts executing at once, races included."""
    max_attempts: Annotated[int, Field(ge=1)] = 3
    """Total attempts per node, the first one included (3 = one try and up to two retries)."""
    retry_delay: Annotated[float, Field(ge=0)] = 0.2
    """Seconds of backoff before the second attempt; doubled for each further one."""
    retry_max_delay: Annotated[float, Field(ge=0)] = 5.0
    """Upper bound, in seconds, of one backoff."""
    retry_jitter: Annotated[float, Field(ge=0, le=1)] = 0.5
    """Fraction of the backoff drawn at random (0 = none, 0.5 = delay x [0.5, 1.0])."""
    step_timeout: Annotated[float, Field(ge=0)] = 30.0
    """Seconds one attempt of a tool call may take (0 = no limit)."""
    sub_agent_timeout: Annotated[float, Field(ge=0)] = 300.0
    """Seconds one attempt of a sub-agent may take: they call models and tools themselves."""
    enable_racing: bool = True
    """False runs the members of a race group as plain parallel nodes."""
    race_timeout: Annotated[float, Field(ge=0)] = 30.0
    """Seconds a whole race group may take, counted from its start (0 = no limit)."""
    hedge: Annotated[float | None, Field(ge=0)] = None
    """Hedging: start each further racer only if none has answered within this many seconds
    (a racer failing starts the next one at once). None starts all racers together."""
    on_failure: FailurePolicy = "skip"
    """skip: dependents of a failed node are skipped ("n1 failed: ...");
    continue: they run, and receive ``{"error": ..., "status": "failed"}`` as that input."""
    max_replan: Annotated[int, Field(ge=0)] = 2
    """How many replans the replanning hook (``GraphRuntime(replanner=...)``) may make during one
    task; 0 turns replanning off. Without a hook nothing is replanned (the Agent gives one when it
    has a model); a hook that declines (returns None) spends nothing."""
    max_result_chars: Annotated[int, Field(ge=1)] = 200_000
    """A node's result, JSON-encoded, is cut to this many characters (with a note saying so); the
    flat setting ``max_tool_result_chars`` before the sections."""
    replan_max_nodes: Annotated[int, Field(ge=1)] = 3
    """Nodes one replan may add."""
    checkpoint_lease: Annotated[float, Field(gt=0)] = 15.0
    """Seconds a running task stays claimed by its process without a heartbeat; after that (or at
    once, when the owner is a dead process on this host) another process may resume it."""

    if TYPE_CHECKING:  # what type checkers see: the fields as keyword-only parameters
        def __init__(
            self, *, max_parallel: int = ..., max_attempts: int = ..., retry_delay: float = ...,
            retry_max_delay: float = ..., retry_jitter: float = ..., step_timeout: float = ...,
            sub_agent_timeout: float = ..., enable_racing: bool = ..., race_timeout: float = ...,
            hedge: float | None = ..., on_failure: FailurePolicy = ..., max_replan: int = ...,
            max_result_chars: int = ..., replan_max_nodes: int = ..., checkpoint_lease: float = ...,
        ) -> None: ...
    else:
        def __init__(self, **values: Any) -> None:
            """Keyword-only; the names before 0.2 (``max_retries``, ``*_ms``) still work, with a
            DeprecationWarning."""
            values = _upgrade(values, warn=True)
            names = {f.name: f for f in dataclasses.fields(self)}
            unknown = sorted(set(values) - set(names))
            if unknown:
                raise TypeError(f"GraphConfig got unknown setting(s): {', '.join(unknown)}")
            for name, spec in names.items():
                object.__setattr__(self, name, values.get(name, spec.default))
            self._check()

    def _check(self) -> None:
        if self.max_parallel < 1:
            raise ValueError(f"max_parallel must be at least 1, got {self.max_parallel}")
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts (total attempts, the first included) must be at least 1, "
                             f"got {self.max_attempts}")
        if self.max_replan < 0:
            raise ValueError(f"max_replan must be 0 or more, got {self.max_replan}")
        for name in _SECONDS:
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative (seconds), got {getattr(self, name)}")
        if not 0.0 <= self.retry_jitter <= 1.0:
            raise ValueError(f"retry_jitter must be between 0 and 1, got {self.retry_jitter}")
        if self.hedge is not None and self.hedge < 0:
            raise ValueError(f"hedge must not be negative (seconds), got {self.hedge}")
        if self.max_result_chars < 1:
            raise ValueError(f"max_result_chars must be at least 1, got {self.max_result_chars}")
        if self.replan_max_nodes < 1:
            raise ValueError(f"replan_max_nodes must be at least 1, got {self.replan_max_nodes}")
        if not self.checkpoint_lease > 0:
            raise ValueError(f"checkpoint_lease must be more than 0 (seconds), got {self.checkpoint_lease}")
        if self.on_failure not in ("skip", "continue"):
            raise ValueError(f"on_failure must be 'skip' or 'continue', got {self.on_failure!r}")

    @property
    def attempts(self) -> int:
        """Attempts per node (``max_attempts``)."""
        return self.max_attempts

    @property
    def max_retries(self) -> int:
        """Deprecated name of ``max_attempts`` (it always meant total attempts)."""
        warnings.warn("GraphConfig.max_retries is deprecated: use max_attempts (total attempts)",
                      DeprecationWarning, stacklevel=2)
        return self.max_attempts

    def timeout_for(self, node_type: str) -> float:
        """Seconds one attempt of a node of this type may take (0 = no limit)."""
        return self.sub_agent_timeout if node_type == "sub_agent" else self.step_timeout

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GraphConfig:
        """Build from a stored dict (a checkpoint's): names from before 0.2 (``max_retries``,
        ``*_ms``) are converted; unknown keys (from a newer version) are ignored."""
        values = _upgrade(dict(data), warn=False)
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in values.items() if k in names})

    @classmethod
    def from_settings(cls, settings: Settings, **overrides: Any) -> GraphConfig:
        """``settings.graph`` (the graph section of the settings), with ``overrides`` applied."""
        return dataclasses.replace(settings.graph, **overrides) if overrides else settings.graph


def _upgrade(values: dict[str, Any], *, warn: bool) -> dict[str, Any]:
    """Old names to new: ``max_retries`` → ``max_attempts`` (0 meant one attempt), ``*_ms`` →
    seconds."""
    out = dict(values)
    old: list[str] = []
    if "max_retries" in out:
        old.append("max_retries")
        count = out.pop("max_retries")
        out.setdefault("max_attempts", max(1, count) if isinstance(count, int) else count)
    for legacy, name in _LEGACY_MS.items():
        if legacy in out:
            old.append(legacy)
            ms = out.pop(legacy)
            out.setdefault(name, ms / 1000.0 if isinstance(ms, int | float) else ms)
    if old and warn:
        warnings.warn(f"GraphConfig: {', '.join(old)} deprecated; use max_attempts and durations in "
                      "seconds (retry_delay, step_timeout, sub_agent_timeout, race_timeout, hedge, ...)",
                      DeprecationWarning, stacklevel=3)
    return out

