"""``VectorFiller``: a background thread that embeds the chunks stored without vectors.

An ingest writes a document's chunks and tokens in one transaction and returns as soon as they are
keyword-searchable; the filler then embeds pending chunks in batches, off the caller's thread (and
never on an event loop). Everything it needs is in the store, so it resumes what any process left:
a killed ingest's chunks are embedded by the next filler that runs (a server's, at start and every
``idle_poll`` seconds; ``saber docs index``; a waiting ``saber ingest``).

When the embedder or the store keeps failing, the chunks stay keyword-searchable and pending, the
filler tries again after ``ERROR_BACKOFF`` seconds (longer after each failure in a row), logs a
warning when the failure is new (a repeat of the same one only at debug level), and ``status()`` says so (``failing``, the
error in one line, the seconds until the next try): what the documents API and the web page show.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Literal

from saber.outages import backoff
from saber.rag.documents import RagError

log = logging.getLogger(__name__)

ERROR_BACKOFF = 30.0
"""Seconds before trying again after the embedder or the store failed; doubled after each failure
in a row, up to ``MAX_ERROR_BACKOFF``, and back to this after a pass that works (an upload's kick
tries again at once whatever the wait)."""
MAX_ERROR_BACKOFF = 600.0

FillState = Literal["filling", "failing", "idle", "stopped"]

_SECRET = re.compile(r"(?i)\b(bearer\s+|sk-)[\w.\-]{6,}")


def describe_failure(exc: BaseException, limit: int = 400) -> str:
    """One line for a failed fill: a ``RagError``'s own message (it names the embedder and its
    endpoint), else ``Type: message``; anything shaped like an API key masked."""
    text = str(exc) if isinstance(exc, RagError) and str(exc) else f"{type(exc).__name__}: {exc}"
    text = _SECRET.sub(lambda m: f"{m.group(1)}***", " ".join(text.split()))
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclasses.dataclass(frozen=True, kw_only=True)
class FillStatus:
    """How the vectors of pending chunks are coming along, as far as this process knows."""

    state: FillState
    """``filling`` (a pass is embedding), ``failing`` (the last attempt failed), ``idle`` (waiting
    for the next look) or ``stopped`` (no filler runs in this process, no failure known)."""
    error: str | None = None
    """The last attempt's failure, one line (``failing`` only)."""
    retry_in_s: float | None = None
    """Seconds until this process's filler tries again (``failing`` with a running filler)."""
    failed_at: datetime | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"state": self.state, "error": self.error, "retry_in_s": self.retry_in_s,
                "failed_at": self.failed_at.isoformat() if self.failed_at else None}


class VectorFiller:
    """Runs ``fill(stop)`` (embed every pending chunk; the count done) in a daemon thread whenever
    kicked, and again every ``idle_poll`` seconds for chunks other processes left."""

    def __init__(self, fill: Callable[[threading.Event], int], *, idle_poll: float = 30.0,
                 name: str = "saber-vector-filler") -> None:
        self._fill = fill
        self.idle_poll = idle_poll
        self.name = name
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._idle = threading.Event()
        self._attempted = threading.Event()
        self._passing = False
        self._retry_at: float | None = None
        self.filled = 0
        """Chunks embedded by this filler so far."""
        self.error: str | None = None
        """The last failure (the embedder or the store), cleared by the next pass that works."""
        self.failed_at: datetime | None = None
        self.failures = 0
        """Failed passes in a row (0 after a pass that works)."""

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def kick(self) -> None:
        """Start the thread if it is not running and make it look for pending chunks now."""
        with self._lock:
            if self._stop.is_set():
                return
            self._idle.clear()
            self._attempted.clear()
            self._wake.set()
            if not self.running:
                self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
                self._thread.start()

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until a pass started after the last ``kick`` found nothing more to embed; False on timeout."""
        return self._idle.wait(timeout)

    def wait_attempt(self, timeout: float | None = None) -> bool:
        """Wait until a pass started after the last ``kick`` has ended, done or failed; False on timeout."""
        return self._attempted.wait(timeout)

    def status(self) -> FillStatus:
        """``failing`` while the last pass failed (until one works), else ``filling`` during a pass
        or once kicked for one, ``idle`` between passes, ``stopped`` when the thread is not running."""
        with self._lock:
            running = self.running and not self._stop.is_set()
            error, failed_at, passing, retry_at = self.error, self.failed_at, self._passing, self._retry_at
            kicked = self._wake.is_set()  # new chunks, a pass about to start
        if error is not None:
            retry = None if not running else 0.0 if passing or retry_at is None \
                else round(max(0.0, retry_at - time.monotonic()), 1)
            return FillStatus(state="failing", error=error, retry_in_s=retry, failed_at=failed_at)
        if not running:
            return FillStatus(state="stopped")
        return FillStatus(state="filling" if passing or kicked else "idle")

    def _run(self) -> None:
        while not self._stop.is_set():
            delay = self.idle_poll
            with self._lock:  # one step: a status read in between never sees a kicked filler as idle
                self._wake.clear()
                self._passing = True
            try:
                self.filled += self._fill(self._stop)
                with self._lock:
                    self.error = self.failed_at = self._retry_at = None
                    self.failures = 0
                    self._passing = False
                    if not self._wake.is_set():  # no kick during the pass: nothing is waiting
                        self._idle.set()
                        self._attempted.set()
            except Exception as exc:  # the embedder or the store: chunks stay pending, retried later
                error = describe_failure(exc)
                with self._lock:
                    repeated = error == self.error
                    self.failures += 1
                    delay = backoff(self.failures, initial=ERROR_BACKOFF, maximum=MAX_ERROR_BACKOFF)
                    self.error, self.failed_at = error, datetime.now(UTC)
                    self._retry_at = time.monotonic() + delay
                    self._passing = False
                    if not self._wake.is_set():
                        self._attempted.set()
                log.log(logging.DEBUG if repeated else logging.WARNING,
                        "vector filler: %s (chunks stay keyword-searchable; retrying in %.0f s)", error, delay)
            self._wake.wait(delay)

    def stop(self, timeout: float = 30.0) -> bool:
        """Stop after the batch being embedded (its vectors are written); True if the thread ended
        within ``timeout``. Chunks not reached stay pending for the next filler."""
        self._stop.set()
        self._wake.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
        return not self.running
