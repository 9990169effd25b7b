"""Split text into parent sections and child chunks (small-to-big retrieval).

Children (default 200 characters, 50 overlap) are what is matched; their parent section (800 / 100)
is what a reader or a model is shown. Splitting is recursive over separators from coarse to fine:
Markdown headings, blank lines, lines, Chinese and English sentence ends (。！？ . ! ?), ；, ，, then
spaces. Fenced code blocks are never cut: one that is longer than the limit becomes a chunk of its own.
Lengths are in characters, so Chinese and English text are measured alike.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

SEPARATORS: tuple[str, ...] = ("\n#", "\n\n", "\n", "。", "！", "？", "! ", "? ", ". ", "；", "; ", "，", ", ", " ")

_FENCE = re.compile(r"^(```|~~~)[^\n]*\n.*?^\1[ \t]*$", re.MULTILINE | re.DOTALL)
_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")


@dataclass(frozen=True, kw_only=True, slots=True)
class ChunkingConfig:
    """How documents are cut: small child chunks (what is matched) inside larger parent sections
    (what is returned), sizes and overlaps in characters."""

    child_size: int = 200
    child_overlap: int = 50
    parent_size: int = 800
    parent_overlap: int = 100

    def __post_init__(self) -> None:
        for size, overlap, what in ((self.child_size, self.child_overlap, "child"),
                                    (self.parent_size, self.parent_overlap, "parent")):
            if size <= 0 or not 0 <= overlap < size:
                raise ValueError(f"{what} chunks: need size > 0 and 0 <= overlap < size (got {size}/{overlap})")


@dataclass(frozen=True, kw_only=True, slots=True)
class Section:
    """A parent: a heading's section (or a piece of a long one), with its heading path."""

    text: str
    headings: tuple[str, ...]
    children: tuple[str, ...]


@dataclass(frozen=True, kw_only=True, slots=True)
class _Unit:
    text: str
    atomic: bool = False


def chunk_document(text: str, config: ChunkingConfig | None = None) -> list[Section]:
    """Parent sections of ``text``, each with its child chunks."""
    cfg = config or ChunkingConfig()
    sections: list[Section] = []
    for headings, body in _split_by_headings(text):
        for parent in split_text(body, cfg.parent_size, cfg.parent_overlap):
            children = tuple(split_text(parent, cfg.child_size, cfg.child_overlap))
            if children:
                sections.append(Section(text=parent, headings=headings, children=children))
    return sections


def _split_by_headings(text: str) -> list[tuple[tuple[str, ...], str]]:
    """(heading path, section text including its heading line) for each Markdown section.

    Heading lines inside code fences are not headings.
    """
    fenced = [(m.start(), m.end()) for m in _FENCE.finditer(text)]
    out: list[tuple[tuple[str, ...], str]] = []
    path: list[tuple[int, str]] = []
    current: list[str] = []
    current_path: tuple[str, ...] = ()
    offset = 0
    for line in text.split("\n"):
        m = _HEADING.match(line)
        inside = any(a <= offset < b for a, b in fenced)
        offset += len(line) + 1
        if m and not inside:
            if "".join(current).strip():
                out.append((current_path, "\n".join(current).strip()))
            level = len(m.group(1))
            path = [(lvl, h) for lvl, h in path if lvl < level] + [(level, m.group(2).strip())]
            current_path = tuple(h for _, h in path)
            current = [line]
        else:
            current.append(line)
    if "".join(current).strip():
        out.append((current_path, "\n".join(current).strip()))
    return out


def split_text(text: str, size: int, overlap: int) -> list[str]:
    """Chunks of at most ``size`` characters (a code block longer than that stays whole), neighbours
    sharing up to ``overlap`` characters of whole pieces."""
    units: list[_Unit] = []
    pos = 0
    for m in _FENCE.finditer(text):
        units.extend(_Unit(text=p) for p in _pieces(text[pos:m.start()], size, SEPARATORS))
        units.append(_Unit(text=m.group(0), atomic=True))
        pos = m.end()
    units.extend(_Unit(text=p) for p in _pieces(text[pos:], size, SEPARATORS))
    return _merge(units, size, overlap)


def _pieces(text: str, size: int, separators: tuple[str, ...]) -> list[str]:
    """Split on the coarsest separator present, recursing into pieces still over ``size``.
    Separators stay attached to the piece they end (so a sentence keeps its 。)."""
    if len(text) <= size:
        return [text] if text.strip() else []
    for i, sep in enumerate(separators):
        if sep not in text:
            continue
        parts = _split_keep(text, sep)
        out: list[str] = []
        for part in parts:
            out.extend([part] if len(part) <= size else _pieces(part, size, separators[i + 1:]))
        return [p for p in out if p.strip()]
    return [text[i:i + size] for i in range(0, len(text), size)]  # one unbroken run: hard cut


def _split_keep(text: str, sep: str) -> list[str]:
    if sep.startswith("\n"):  # the newline ends the previous piece; a heading marker starts the next
        pieces = text.split(sep)
        head = sep[1:]
        return [pieces[0] + "\n"] + [head + p + "\n" for p in pieces[1:]]
    pieces = text.split(sep)
    return [p + sep for p in pieces[:-1]] + [pieces[-1]]


def _merge(units: list[_Unit], size: int, overlap: int) -> list[str]:
    chunks: list[str] = []
    window: list[_Unit] = []
    length = 0
    for unit in units:
        if window and length + len(unit.text) > size:
            chunks.append("".join(u.text for u in window).strip())
            # carry the tail (whole non-code pieces) that fits into the overlap
            carried: list[_Unit] = []
            carried_len = 0
            for prev in reversed(window):
                if prev.atomic or carried_len + len(prev.text) > overlap:
                    break
                carried.insert(0, prev)
                carried_len += len(prev.text)
            if carried_len + len(unit.text) > size:
                carried, carried_len = [], 0
            window, length = carried, carried_len
        window.append(unit)
        length += len(unit.text)
    if window:  # never empty of new text: a flush is always followed by appending a unit
        chunks.append("".join(u.text for u in window).strip())
    return [c for c in chunks if c]
