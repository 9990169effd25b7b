"""An earlier revision's ``src``, for benchmarks that run it side by side with this checkout's."""

from __future__ import annotations

import subprocess
import tarfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_BEFORE = "91bf376"
"""main before this round's start-up work: the agent imported every mode, the stores loaded
SQLAlchemy (SQLite included), numpy, httpx and the planner's parsers on every command."""


def extract_src(revision: str, into: Path) -> Path:
    """``src`` of ``revision`` under ``into`` (``git archive``: the checkout is not touched)."""
    archive = into / "src.tar"
    with archive.open("wb") as out:
        done = subprocess.run(["git", "-C", str(REPO), "archive", revision, "src"], stdout=out, stderr=subprocess.PIPE)
    if done.returncode != 0:
        raise SystemExit(f"cannot read revision {revision!r}: {done.stderr.decode().strip()}")
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return into / "src"
