"""The main content of an HTML page as Markdown-ish text: navigation, headers, footers and
boilerplate removed by trafilatura; headings, paragraphs, lists and tables kept with their structure.

trafilatura's own Markdown output escapes characters (``[`` becomes ``\\[``), which would change
the stored text, so its XML is rendered here instead: every character of the page text is kept.
"""

from __future__ import annotations

import re
from typing import Any

_BLOCK_TAG = re.compile(r"<(?:p|h[1-6]|table|tr|li|pre|blockquote)\b", re.IGNORECASE)


def extract_main(html: str) -> tuple[str, str] | None:
    """(title, text) of the page's main content, or None when trafilatura finds none (a tiny page:
    the caller then reads the page itself, without its navigation)."""
    found = _extract(html, precision=False)
    if found is not None and len(found[1]) == 1 and len(_BLOCK_TAG.findall(html)) > 1:
        # one block from a page of several: trafilatura judged the page too small and fell back to
        # its baseline, the whole body run together (navigation and table cells included)
        found = _extract(html, precision=True)
        if found is None or len(found[1]) == 1:
            return None
    if found is None:
        return None
    title, blocks = found
    return title, "\n\n".join(blocks)


def _extract(html: str, *, precision: bool) -> tuple[str, list[str]] | None:
    """trafilatura's main content as (title, non-empty blocks), None when it finds none; judged
    for recall (what a knowledge base wants) or, asked again, for precision."""
    import trafilatura
    from lxml import etree

    xml = trafilatura.extract(html, output_format="xml", include_tables=True, include_comments=False,
                              with_metadata=True, deduplicate=False, favor_recall=not precision,
                              favor_precision=precision)
    if not xml:
        return None
    root = etree.fromstring(xml.encode("utf-8"))
    main = root.find("main")
    blocks = [b for b in (_block(child) for child in (main if main is not None else root)) if b.strip()]
    if not blocks:
        return None
    return (root.get("title") or "").strip(), blocks


def _text(el: Any) -> str:
    return " ".join("".join(el.itertext()).split())


def _block(el: Any) -> str:
    tag = el.tag
    if tag == "head":
        rend = el.get("rend") or "h2"
        level = int(rend[1]) if len(rend) == 2 and rend[1].isdigit() else 2
        return "#" * level + " " + _text(el)
    if tag == "table":
        return _table(el)
    if tag == "list":
        return "\n".join(f"- {_text(item)}" for item in el.iter("item"))
    if tag in ("code", "quote") and "\n" in "".join(el.itertext()):
        return "".join(el.itertext()).strip("\n")
    return _text(el)


def _table(el: Any) -> str:
    """A Markdown table: one line per row, cells separated by ``|``, a rule under a header row."""
    rows: list[list[str]] = []
    header = False
    for n, row in enumerate(el.iter("row")):
        cells = [_text(c).replace("|", "\\|") for c in row.iter("cell")]
        if not cells:
            continue
        if n == 0:
            header = all(c.get("role") == "head" for c in row.iter("cell"))
        rows.append(cells)
    if not rows:
        return ""
    width = max(len(r) for r in rows)
    lines = ["| " + " | ".join(r + [""] * (width - len(r))) + " |" for r in rows]
    if header:
        lines.insert(1, "|" + "---|" * width)
    return "\n".join(lines)
