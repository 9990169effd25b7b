"""What a user reads from ``read_file``: the exact header and numbered lines of a part of a file,
the notice that more lines follow (and none at the end), a large file read line by line, and the
errors that name the problem (a wrong offset or limit, a line past the end, text in no encoding
Saber reads, a binary file with its size)."""

from __future__ import annotations

from pathlib import Path

import pytest

from saber.tools import ToolArgumentError, ToolError
from saber.tools.system.files import FileLimits, file_tools
from saber.tools.system.textfile import SNIFF_BYTES
from saber.tools.system.workspace import Workspace


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "five.txt").write_text("one\ntwo\nthree\nfour\nfive\n", encoding="utf-8")
    return root


async def read(root: Path, path: str, limits: FileLimits | None = None, **args: int) -> str:
    tools = {t.name: t for t in file_tools(Workspace([root]), limits)}
    return str(await tools["read_file"].run({"path": path, **args}))


async def test_a_whole_small_file_is_numbered_with_its_line_count_and_nothing_more(root: Path) -> None:
    assert await read(root, "docs/five.txt") == (
        "docs/five.txt (lines 1-5 of 5)\n     1\tone\n     2\ttwo\n     3\tthree\n     4\tfour\n     5\tfive"
    )


async def test_a_part_says_where_it_is_and_that_more_lines_follow(root: Path) -> None:
    assert await read(root, "docs/five.txt", offset=2, limit=2) == (
        "docs/five.txt (lines 2-3 of 5)\n     2\ttwo\n     3\tthree\n… more lines: read on with offset"
    )
    assert await read(root, "docs/five.txt", offset=4, limit=2) == (
        "docs/five.txt (lines 4-5 of 5)\n     4\tfour\n     5\tfive"
    )
    assert (
        await read(root, "docs/five.txt", offset=5, limit=10)
        == "docs/five.txt (lines 5-5 of 5)\n     5\tfive"
    )


async def test_at_most_max_lines_are_returned_whatever_the_limit(root: Path) -> None:
    out = await read(root, "docs/five.txt", FileLimits(max_lines=2), limit=4)
    assert (
        out == "docs/five.txt (lines 1-2 of 5)\n     1\tone\n     2\ttwo\n… more lines: read on with offset"
    )
    out = await read(root, "docs/five.txt", FileLimits(max_lines=3))
    assert out.splitlines()[0] == "docs/five.txt (lines 1-3 of 5)"


async def test_an_offset_past_the_end_says_how_long_the_file_is(root: Path) -> None:
    assert await read(root, "docs/five.txt", offset=6) == "docs/five.txt: no line 6 (the file has 5 lines)"
    (root / "empty.txt").write_bytes(b"")
    assert await read(root, "empty.txt") == "empty.txt: no line 1 (the file has 0 lines)"


async def test_a_wrong_offset_or_limit_is_refused_with_the_reason(root: Path) -> None:
    with pytest.raises(ToolArgumentError, match="offset: must be 1 or more"):
        await read(root, "docs/five.txt", offset=0)
    with pytest.raises(ToolArgumentError, match="limit: must be 1 or more"):
        await read(root, "docs/five.txt", limit=0)
    assert (await read(root, "docs/five.txt", offset=1, limit=1)).splitlines()[
        0
    ] == "docs/five.txt (lines 1-1 of 5)"


async def test_a_file_of_exactly_the_read_limit_is_read_whole(root: Path) -> None:
    text = "".join(f"{i:09}\n" for i in range(1, 1000)) + "000001000"  # 9,999 bytes, past the binary sniff
    (root / "exact.txt").write_text(text, encoding="utf-8")
    out = await read(root, "exact.txt", FileLimits(max_read_bytes=9_999), offset=999)
    assert out == "exact.txt (lines 999-1000 of 1000)\n   999\t000000999\n  1000\t000001000"
    one = await read(root, "exact.txt", FileLimits(max_read_bytes=9_999), offset=999, limit=1)
    assert one == "exact.txt (lines 999-999 of 1000)\n   999\t000000999\n… more lines: read on with offset"
    part = await read(root, "exact.txt", FileLimits(max_read_bytes=9_998), offset=999)
    assert (
        part
        == "exact.txt (lines 999-1000)\n   999\t000000999\n  1000\t000001000\n… more lines: read on with offset"
    )


async def test_a_large_file_is_read_line_by_line_in_either_encoding(root: Path) -> None:
    lines = [f"第{i}行 line {i}" for i in range(1, 3001)]
    (root / "big.txt").write_bytes(("\r\n".join(lines) + "\r\n").encode("gb18030"))
    limits = FileLimits(max_read_bytes=1000, max_lines=100)
    out = await read(root, "big.txt", limits, offset=2999, limit=5)
    assert (
        out == "big.txt (lines 2999-3000)\n  2999\t第2999行 line 2999\n  3000\t第3000行 line 3000\n"
        "… more lines: read on with offset"
    )
    assert (
        await read(root, "big.txt", limits, offset=3001) == "big.txt: no line 3001 (the file has 3000 lines)"
    )


async def test_text_in_no_encoding_saber_reads_is_named(root: Path) -> None:
    bad = b"\xff\xfe\xfa broken\n"
    (root / "bad.txt").write_bytes(b"fine\n" + bad)
    with pytest.raises(ToolError, match="^bad.txt: not UTF-8 or GB18030 text$"):
        await read(root, "bad.txt")
    (root / "big-bad.txt").write_bytes(b"fine line\n" * 300 + bad + b"more\n" * 300)
    limits = FileLimits(max_read_bytes=1000)
    with pytest.raises(ToolError, match="^big-bad.txt: line 301 is not UTF-8 or GB18030 text$"):
        await read(root, "big-bad.txt", limits)
    out = await read(root, "big-bad.txt", limits, offset=299, limit=2)
    assert (
        out
        == "big-bad.txt (lines 299-300)\n   299\tfine line\n   300\tfine line\n… more lines: read on with offset"
    )


async def test_a_binary_file_is_refused_with_its_size(root: Path) -> None:
    (root / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 2000)
    with pytest.raises(ToolError, match=r"^img.png: binary file \(2,008 bytes\), not shown$"):
        await read(root, "img.png")
    (root / "late.bin").write_bytes(b"a" * (SNIFF_BYTES - 1) + b"\x00" + b"b" * 100)
    with pytest.raises(ToolError, match=r"^late.bin: binary file \(8,292 bytes\), not shown$"):
        await read(root, "late.bin")
    (root / "later.txt").write_bytes(b"a" * SNIFF_BYTES + b"\x00tail\n")
    assert (await read(root, "later.txt")).startswith("later.txt (lines 1-1 of 1)")


async def test_a_large_file_keeps_each_line_whole_from_its_first_character(root: Path) -> None:
    (root / "big.txt").write_bytes(
        b"Xfirst line ends in spaces  \r\nthe second in X\r\n" + b"filler line\n" * 200
    )
    out = await read(root, "big.txt", FileLimits(max_read_bytes=100), limit=2)
    assert out == (
        "big.txt (lines 1-2)\n     1\tXfirst line ends in spaces  \n     2\tthe second in X\n"
        "… more lines: read on with offset"
    )
