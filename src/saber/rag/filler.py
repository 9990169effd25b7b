"""``VectorFiller``: a background thread that embeds the chunks stored without vectors.

An ingest writes a document's chunks and tokens in one transaction and returns as soon as they are
keyword-searchable; the filler then embeds pending chunks in batches, off the caller's thread (and
never on an event loop). Everything it needs is in the store, so it resumes what any process left:
a killed ingest's chunks are embedded by the next filler that runs (a server's, at start and every
``idle_poll`` seconds; ``saber docs index``; a waiting ``saber ingest``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)

ERROR_BACKOFF = 30.0
"""Seconds before trying again after the embedder or the store failed."""


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
        self.filled = 0
        """Chunks embedded by this filler so far."""
        self.error: str | None = None
        """The last failure (the embedder or the store), cleared by the next pass that works."""

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def kick(self) -> None:
        """Start the thread if it is not running and make it look for pending chunks now."""
        with self._lock:
            if self._stop.is_set():
                return
            self._idle.clear()
            self._wake.set()
            if not self.running:
                self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
                self._thread.start()

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until a pass started after the last ``kick`` found nothing more to embed; False on timeout."""
        return self._idle.wait(timeout)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.clear()
            delay = self.idle_poll
            try:
                self.filled += self._fill(self._stop)
                self.error = None
                with self._lock:
                    if not self._wake.is_set():  # no kick during the pass: nothing is waiting
                        self._idle.set()
            except Exception as exc:  # the embedder or the store: chunks stay pending, retried later
                self.error = f"{type(exc).__name__}: {exc}"
                log.warning("vector filler: %s (chunks stay keyword-searchable; retrying in %.0f s)",
                            self.error, ERROR_BACKOFF)
                delay = ERROR_BACKOFF
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
