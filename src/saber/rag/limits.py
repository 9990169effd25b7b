"""What reading one file may use: inflated bytes, compression ratio and extracted text, enforced
while the file is read, and a cancel signal the reader checks between steps.

A 1.9 MB .docx can inflate to gigabytes, so the size of the file on disk (``rag.max_file_mb``) says
little about the cost of reading it. ``Budget`` counts what a loader inflates and extracts as it
goes and raises ``LimitExceeded`` (naming the setting) the moment a limit is passed, before the
bytes past it are made; ``IngestCancelled`` when the caller set ``cancel`` (its client went away).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from saber.rag.documents import FileTooLarge, RagError

MB = 1024 * 1024


class LimitExceeded(FileTooLarge):
    """Reading a file went past one of the ``rag.max_*`` limits; ``setting`` names it."""

    def __init__(self, message: str, *, setting: str) -> None:
        super().__init__(message)
        self.setting = setting


class IngestCancelled(RagError):
    """The ingest was cancelled while the file was read (its HTTP client hung up): nothing was stored."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ReadLimits:
    max_inflated_bytes: int = 100 * MB
    """Bytes a file may inflate to in all (zip members read, PDF content streams): ``rag.max_inflated_mb``."""
    max_ratio: float = 100.0
    """Inflated bytes per compressed byte of one zip member or PDF stream: ``rag.max_ratio``."""
    max_text_chars: int = 5_000_000
    """Characters of text one file may yield: ``rag.max_text_chars``."""
    ratio_floor_bytes: int = 1 * MB
    """A part that inflates to less than this is not held to ``max_ratio`` (a small, very regular
    XML part can compress 200:1 and costs nothing to read)."""

    @classmethod
    def from_mb(cls, *, max_inflated_mb: float, max_ratio: float, max_text_chars: int) -> ReadLimits:
        return cls(max_inflated_bytes=int(max_inflated_mb * MB), max_ratio=max_ratio, max_text_chars=max_text_chars)

    def stream_limit(self, compressed: int) -> tuple[int, str]:
        """The most one stream of ``compressed`` bytes may inflate to, and the setting that sets it."""
        by_ratio = max(int(compressed * self.max_ratio), self.ratio_floor_bytes)
        return (by_ratio, "rag.max_ratio") if by_ratio < self.max_inflated_bytes else (
            self.max_inflated_bytes, "rag.max_inflated_mb")


class Budget:
    """One file's reading: what it inflated and extracted so far, against ``limits``."""

    def __init__(self, name: str, limits: ReadLimits, cancel: threading.Event | None = None) -> None:
        self.name, self.limits, self.cancel = name, limits, cancel
        self.inflated = 0
        self.text = 0
        self.position = ""
        """How far the reading got ("at page 3 of 12"), set by the loader, for the messages."""

    def check_cancelled(self) -> None:
        """Raise IngestCancelled once ``cancel`` is set."""
        if self.cancel is not None and self.cancel.is_set():
            where = f" {self.position}" if self.position else ""
            raise IngestCancelled(f"{self.name}: the ingest was cancelled{where} (its client went away); nothing was stored")

    def declare(self, part: str, size: int, compressed: int) -> None:
        """A part's size as its header states it, checked before any of it is inflated."""
        self.check_ratio(part, size, compressed)
        if self.inflated + size > self.limits.max_inflated_bytes:
            raise self.too_large(part, self.inflated + size, declared=True)

    def inflate(self, part: str, n: int, *, so_far: int | None = None, compressed: int | None = None) -> None:
        """``n`` more bytes inflated (``so_far`` of the part from ``compressed`` bytes, for the ratio)."""
        self.check_cancelled()
        self.inflated += n
        if self.inflated > self.limits.max_inflated_bytes:
            raise self.too_large(part, self.inflated)
        if so_far is not None and compressed is not None:
            self.check_ratio(part, so_far, compressed)

    def check_ratio(self, part: str, size: int, compressed: int) -> None:
        if size > self.limits.ratio_floor_bytes and size > compressed * self.limits.max_ratio:
            raise LimitExceeded(
                f"{self.name}: {part} inflates {size / max(compressed, 1):,.0f}:1 ({size / MB:,.1f} MB from "
                f"{compressed / 1024:,.1f} KB), over the {self.limits.max_ratio:g}:1 limit (rag.max_ratio): "
                "a decompression bomb?", setting="rag.max_ratio")

    def too_large(self, part: str, total: int, *, declared: bool = False) -> LimitExceeded:
        how = "would inflate" if declared else "inflates"
        return LimitExceeded(
            f"{self.name}: {how} to {total / MB:,.1f} MB (at {part}), over the "
            f"{self.limits.max_inflated_bytes / MB:g} MB limit (rag.max_inflated_mb): a decompression bomb?",
            setting="rag.max_inflated_mb")

    def extracted(self, n: int) -> None:
        """``n`` more characters of text extracted."""
        self.check_cancelled()
        self.text += n
        if self.text > self.limits.max_text_chars:
            raise LimitExceeded(
                f"{self.name}: more than {self.limits.max_text_chars:,} characters of text, over the limit "
                "(rag.max_text_chars)", setting="rag.max_text_chars")
