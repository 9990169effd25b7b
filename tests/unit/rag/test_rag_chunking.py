from __future__ import annotations

import pytest

from saber.rag.chunking import ChunkingConfig, chunk_document, split_text


def test_children_respect_size_and_overlap_on_chinese_sentences() -> None:
    text = "".join(f"第{i}句话讲的是一个关于茶叶和水温的小知识点。" for i in range(40))
    chunks = split_text(text, 200, 50)
    assert len(chunks) > 3
    assert all(len(c) <= 200 for c in chunks)
    assert all(c.endswith("。") for c in chunks)  # cut at sentence ends, never mid-sentence
    for a, b in zip(chunks, chunks[1:], strict=False):
        tail = a[-50:]
        assert any(s and s in b for s in tail.split("。") if len(s) > 5)  # overlap carries a whole sentence


def test_code_fences_are_never_split() -> None:
    code = "```python\n" + "\n".join(f"x{i} = {i}  # line {i}" for i in range(30)) + "\n```"
    text = "Intro sentence. " * 10 + "\n\n" + code + "\n\nAfter the code. " * 5
    chunks = split_text(text, 200, 50)
    assert code in chunks
    assert sum(code in c for c in chunks) == 1


def test_sections_follow_headings_and_children_point_to_parents() -> None:
    text = "# Title\n\nIntro.\n\n## Part A\n\n" + "Alpha sentence here. " * 60 + "\n\n## Part B\n\nBeta only."
    sections = chunk_document(text)
    paths = [s.headings for s in sections]
    assert ("Title",) in paths and ("Title", "Part B") in paths
    part_a = [s for s in sections if s.headings == ("Title", "Part A")]
    assert len(part_a) >= 2 and all(len(s.text) <= 800 for s in part_a)
    for s in sections:
        assert all(len(c) <= 200 for c in s.children)
        assert all(c in s.text for c in s.children)


def test_heading_inside_code_is_not_a_section() -> None:
    text = "# Doc\n\n```bash\n# install\npip install saber\n```\n"
    sections = chunk_document(text)
    assert [s.headings for s in sections] == [("Doc",)]


def test_invalid_config_is_rejected() -> None:
    with pytest.raises(ValueError, match="overlap"):
        ChunkingConfig(child_size=100, child_overlap=100)
