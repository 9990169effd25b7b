"""Reading files as text safely: binary files are recognised, not dumped; UTF-8 first, then
GB18030 (which also reads GBK and GB2312 files, common for Chinese text)."""

from __future__ import annotations

SNIFF_BYTES = 8192


def looks_binary(head: bytes) -> bool:
    """A NUL byte in the first block, as git and ripgrep decide."""
    return b"\x00" in head[:SNIFF_BYTES]


def decode(data: bytes) -> tuple[str, str]:
    """The text and the encoding that read it; ValueError when neither UTF-8 nor GB18030 does."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    for encoding in ("utf-8", "gb18030"):
        try:
            return data.decode(encoding), encoding
        except UnicodeDecodeError:
            continue
    raise ValueError("not UTF-8 or GB18030 text")

