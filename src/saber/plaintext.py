"""The plain text of Markdown a user wrote: what a reader sees, without the marks.

``plain_text("Research **Oslo** and write a report")`` → ``"Research Oslo and write a report"``;
links keep their text, inline code its content, headings and list items lose their marks,
images keep their alt text, HTML tags are dropped. Parsed by markdown-it-py (CommonMark), so
"2 * 3 * 4" and "snake_case_name" stay as written while "*Oslo*" loses its stars. Used for search
queries and titles: a query for "**Oslo**" finds nothing better than one for "Oslo".
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token

_BLOCK_ENDS = frozenset({"paragraph_close", "heading_close", "list_item_close", "blockquote_close",
                         "fence", "code_block", "th_close", "td_close", "tr_close"})


@cache
def _parser() -> MarkdownIt:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").enable("table").enable("strikethrough")


def _inline(children: list[Token]) -> str:
    parts: list[str] = []
    for token in children:
        if token.type in ("text", "code_inline"):
            parts.append(token.content)
        elif token.type in ("softbreak", "hardbreak"):
            parts.append(" ")
        elif token.type == "image":
            parts.append(_inline(token.children or []))
    return "".join(parts)


def plain_text(text: str) -> str:
    """``text`` read as Markdown, marks removed; blocks (paragraphs, headings, items) one a line,
    spaces inside a line collapsed."""
    lines: list[str] = []
    current: list[str] = []
    for token in _parser().parse(text):
        if token.type == "inline":
            current.append(_inline(token.children or []))
        elif token.type in ("fence", "code_block"):
            current.append(token.content)
        if token.type in _BLOCK_ENDS:
            line = " ".join(" ".join(current).split())
            if line:
                lines.append(line)
            current = []
    tail = " ".join(" ".join(current).split())
    if tail:
        lines.append(tail)
    return "\n".join(lines)


TITLE_SCAN = 4096
"""Characters of a request read for a title or a query (a pasted megabyte is not parsed for one)."""


def plain_line(text: str) -> str:
    """``plain_text`` of the first ``TITLE_SCAN`` characters on one line (blocks joined by
    spaces): for titles and search queries."""
    return " ".join(plain_text(text[:TITLE_SCAN]).split())
