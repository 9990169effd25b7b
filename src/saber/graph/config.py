"""``GraphConfig``: how a task graph is run (parallelism, retries, timeouts, races, replans)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

FailurePolicy = Literal["skip", "continue"]


@dataclass(frozen=True, kw_only=True)
class GraphConfig:
    """Run-time knobs. Defaults follow the original system where it was right."""

    max_parallel: int = 8
    """Upper bound on tool / sub-agent attempts executing at once, races included."""
    max_retries: int = 3
    """Total attempts per node, the first one included (3 = one try and up to two retries).
    0 and 1 both mean a single attempt: a node is always tried, never marked done unrun."""
    retry_delay_ms: float = 200.0
    """Backoff before the second attempt; doubled for each further one."""
    retry_max_delay_ms: float = 5_000.0
    retry_jitter: float = 0.5
    """Fraction of the backoff drawn at random (0 = none, 0.5 = delay x [0.5, 1.0])."""
    step_timeout_ms: float = 5_000.0
    """Per-attempt timeout of a tool call."""
    sub_agent_timeout_ms: float = 120_000.0
    """Per-attempt timeout of a sub-agent: they call models and tools themselves, so get longer."""
    enable_racing: bool = True
    """False runs the members of a race group as plain parallel nodes."""
    race_timeout_ms: float = 30_000.0
    """Deadline for a whole race group, counted from its start."""
    hedge_ms: float | None = None
    """Hedging: start each further racer only if none has answered within this many ms
    (a racer failing starts the next one at once). None starts all racers together."""
    on_failure: FailurePolicy = "skip"
    """skip: dependents of a failed node are skipped ("n1 failed: ...");
    continue: they run, and receive ``{"error": ..., "status": "failed"}`` as that input."""
    max_replan: int = 2
    """How many times the replanning hook may be called during one task."""
    max_result_chars: int = 200_000
    """A node's result, JSON-encoded, is cut to this many characters (with a note saying so)."""

    def __post_init__(self) -> None:
        if self.max_parallel < 1:
            raise ValueError(f"max_parallel must be at least 1, got {self.max_parallel}")
        if self.max_retries < 0:
            raise ValueError(f"max_retries (total attempts) must be 0 or more, got {self.max_retries}")
        if self.max_replan < 0:
            raise ValueError(f"max_replan must be 0 or more, got {self.max_replan}")
        for name in ("retry_delay_ms", "retry_max_delay_ms", "step_timeout_ms", "sub_agent_timeout_ms", "race_timeout_ms"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative, got {getattr(self, name)}")
        if not 0.0 <= self.retry_jitter <= 1.0:
            raise ValueError(f"retry_jitter must be between 0 and 1, got {self.retry_jitter}")
        if self.hedge_ms is not None and self.hedge_ms < 0:
            raise ValueError(f"hedge_ms must not be negative, got {self.hedge_ms}")
        if self.max_result_chars < 1:
            raise ValueError(f"max_result_chars must be at least 1, got {self.max_result_chars}")
        if self.on_failure not in ("skip", "continue"):
            raise ValueError(f"on_failure must be 'skip' or 'continue', got {self.on_failure!r}")

    @property
    def attempts(self) -> int:
        """Attempts per node: ``max_retries``, at least 1."""
        return max(1, self.max_retries)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GraphConfig:
        """Build from a stored dict; unknown keys (from a newer version) are ignored."""
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})
