"""Read a file into text: .txt, .md, .html, .pdf (pypdf), .docx (python-docx).

Each loader returns Markdown-ish text (headings as ``#`` lines where the format has them) so the
chunker can split on sections. Errors name the file and the problem.
"""

from __future__ import annotations

import html
import logging
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

from saber.rag.documents import (
    EmptyDocument,
    FileTooLarge,
    RagError,
    UnsupportedFileType,
    normalize_text,
    stored_text,
)
from saber.rag.limits import Budget, LimitExceeded, ReadLimits

log = logging.getLogger(__name__)

DEFAULT_MAX_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True, kw_only=True, slots=True)
class LoadedFile:
    title: str
    text: str
    doc_type: str
    source: str


def load_file(path: str | Path, *, max_bytes: int = DEFAULT_MAX_BYTES, limits: ReadLimits | None = None,
              cancel: threading.Event | None = None) -> LoadedFile:
    """Text and title of ``path``; raises UnsupportedFileType, FileTooLarge (``LimitExceeded`` for a
    file that inflates or extracts past ``limits``), EmptyDocument, RagError, or IngestCancelled
    once ``cancel`` is set. Blocking and CPU-heavy: call it from a worker thread."""
    p = Path(path)
    suffix = p.suffix.lower().lstrip(".")
    loader = _LOADERS.get(suffix)
    if loader is None:
        raise UnsupportedFileType(
            f"{p.name}: unsupported file type {('.' + suffix) if suffix else '(no extension)'}; "
            f"supported: {', '.join('.' + s for s in SUPPORTED_TYPES)}"
        )
    if not p.is_file():
        raise RagError(f"{p}: not a regular file (a pipe, a device or a folder)" if p.exists() else f"{p}: no such file")
    size = p.stat().st_size
    if size > max_bytes:
        raise FileTooLarge(f"{p.name}: {size / 1048576:.1f} MB is over the {max_bytes / 1048576:.0f} MB limit")
    budget = Budget(p.name, limits or ReadLimits(), cancel)
    try:
        title, text = loader(p, budget)
        if len(text) > budget.limits.max_text_chars:  # the formats read whole; .docx and .pdf count as they go
            budget.text = 0
            budget.extracted(len(text))
    except RagError:
        raise
    except Exception as exc:  # a parser's own error on a corrupt file
        raise RagError(f"{p.name}: cannot read {suffix} file: {exc}") from None
    if not normalize_text(text):
        why = "the file is empty" if size == 0 else "it holds no text: an image-only PDF or an empty document?"
        raise EmptyDocument(f"{p.name}: no text found ({why})")
    text = stored_text(text)
    doc_type = "md" if suffix == "markdown" else "html" if suffix == "htm" else suffix
    return LoadedFile(title=title or p.stem, text=text, doc_type=doc_type, source=str(p.resolve()))


_CJK_OR_PUNCT = re.compile(r"[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef]")


def _read_text(p: Path) -> str:
    """UTF-8, else GB18030 when the result reads as Chinese: many Western (cp1252) files also
    decode as GB18030, into nonsense characters that must not be indexed."""
    raw = p.read_bytes()
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        pass
    try:
        text = raw.decode("gb18030")
    except UnicodeDecodeError:
        text = ""
    non_ascii = [ch for ch in text if ord(ch) > 127]
    if (non_ascii and sum(1 for ch in non_ascii if _CJK_OR_PUNCT.match(ch)) / len(non_ascii) > 0.9
            and _reads_as_chinese(text) and not _CONTROL.search(text)):  # a binary file's header ("\x89PNG\x1a")
        return text
    raise RagError(f"{p.name}: not valid UTF-8 (or GB18030 Chinese) text; save it as UTF-8")


_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")
"""Control characters no text file holds (tabs, line and page breaks aside)."""


def _reads_as_chinese(text: str) -> bool:
    """Mis-decoded Latin text yields CJK characters glued to Latin letters ("Gr鲞e"); real Chinese
    text rarely puts a Han character between two ASCII letters."""
    return not re.search(r"[A-Za-z][\u3400-\u9fff][A-Za-z]|[A-Za-z][\u3400-\u9fff]{1,2}[a-z]", text)


_MD_TITLE = re.compile(r"^#\s+(.+?)\s*#*\s*$", re.MULTILINE)


def _load_txt(p: Path, budget: Budget) -> tuple[str, str]:
    return "", _read_text(p)


def _load_md(p: Path, budget: Budget) -> tuple[str, str]:
    text = _read_text(p)
    m = _MD_TITLE.search(text)
    return (m.group(1).strip() if m else ""), text


class _HtmlToText(HTMLParser):
    """A page's text with its headings, paragraphs and table rows (``| a | b |``); with
    ``boilerplate=False`` without navigation, page headers and footers, asides and forms."""

    _SKIP = {"script", "style", "noscript", "template", "svg", "head"}
    _BOILERPLATE = {"nav", "header", "footer", "aside", "form"}
    _BLOCK = {"p", "div", "section", "article", "main", "li", "br", "table", "ul", "ol", "blockquote", "pre", "hr"}

    def __init__(self, *, boilerplate: bool = True) -> None:
        super().__init__(convert_charrefs=True)
        self.skipped = self._SKIP if boilerplate else self._SKIP | self._BOILERPLATE
        self.parts: list[str] = []
        self.title = ""
        self._skip = 0
        self._cell = 0
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.skipped:
            self._skip += 1
        if tag == "title":
            self._in_title = True
        elif re.fullmatch(r"h[1-6]", tag):
            self.parts.append("\n\n" + "#" * int(tag[1]) + " ")
        elif tag == "tr":
            self.parts.append("\n|")
        elif tag in ("td", "th"):
            self._cell += 1
            self.parts.append(" ")
        elif tag in self._BLOCK:
            self.parts.append("\n\n" if tag != "br" else "\n")
        if tag == "pre":
            self.parts.append("```\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in self.skipped and self._skip:
            self._skip -= 1
        if tag == "title":
            self._in_title = False
        elif tag == "pre":
            self.parts.append("\n```\n\n")
        elif tag in ("td", "th"):
            self._cell = max(0, self._cell - 1)
            self.parts.append(" |")
        elif re.fullmatch(r"h[1-6]", tag) or tag in self._BLOCK:
            self.parts.append("\n\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        elif not self._skip:
            self.parts.append(data.replace("|", "\\|") if self._cell else data)

    def text(self) -> str:
        text = re.sub(r"[ \t]+", " ", "".join(self.parts))
        text = re.sub(r"\n[ \t]+", "\n", text)
        return re.sub(r"\n{3,}", "\n\n", text).strip()


def _load_html(p: Path, budget: Budget) -> tuple[str, str]:
    """The main content (trafilatura); a page too small for it to judge is read whole."""
    from saber.rag.html_main import extract_main

    source = _read_text(p)
    main = extract_main(source)
    parser = _HtmlToText()
    if main is not None:
        parser.feed(source[: source.lower().find("</title>") + 8] if "</title>" in source.lower() else "")
        return html.unescape(parser.title).strip() or main[0], main[1]
    for boilerplate in (False, True):  # the page without its navigation; all of it when that is all it has
        parser = _HtmlToText(boilerplate=boilerplate)
        parser.feed(source)
        parser.close()
        if text := parser.text():
            break
    return html.unescape(parser.title).strip(), text


def _load_pdf(p: Path, budget: Budget) -> tuple[str, str]:
    """Page by page: each page's content streams count against ``rag_max_inflated_mb`` (and, in
    all, ``rag_max_ratio`` of the file's size) before its text is extracted; pypdf's own output
    limits per stream are set from the same settings, so no single stream inflates past them."""
    import pypdf
    from pypdf.errors import LimitReachedError

    size = p.stat().st_size
    per_stream, setting = budget.limits.stream_limit(size)
    limits = {name: per_stream for name in _PYPDF_OUTPUT_LIMITS}
    pages: list[str] = []
    try:
        with pypdf.apply_configuration(None, **limits):
            reader = pypdf.PdfReader(str(p))
            for number, page in enumerate(reader.pages, 1):
                budget.position = f"at page {number} of {len(reader.pages)}"
                budget.check_cancelled()
                contents = page.get_contents()
                if contents is not None:
                    budget.inflate(f"page {number}", len(contents.get_data()))
                    budget.check_ratio("its content streams", budget.inflated, size)
                pages.append(page.extract_text() or "")
                budget.extracted(len(pages[-1]))
                if number % 1000 == 0:
                    log.debug("%s: read %d of %d pages", p.name, number, len(reader.pages))
            meta_title = str(reader.metadata.title).strip() if reader.metadata is not None and reader.metadata.title else ""
    except LimitReachedError as exc:
        raise LimitExceeded(f"{p.name}: a stream inflates past {per_stream / 1048576:,.1f} MB, the limit ({setting}) "
                            f"for a {size / 1024:,.0f} KB file: a decompression bomb? ({exc})", setting=setting) from None
    except pypdf.errors.PdfReadError as exc:
        raise RagError(f"{p.name}: not a readable PDF: {exc}") from None
    if not pages:
        raise EmptyDocument(f"{p.name}: the PDF has no pages")
    text = "\n\n".join(pages)
    if not text.strip():
        raise EmptyDocument(
            f"{p.name}: the PDF has {len(pages)} page(s) but no extractable text "
            "(image-only or scanned PDF; run OCR first)"
        )
    return meta_title, text


_PYPDF_OUTPUT_LIMITS = (
    "zlib_maximum_output_length", "lzw_maximum_output_length", "run_length_maximum_output_length",
    "brotli_maximum_output_length", "jbig2_maximum_output_length", "array_based_stream_maximum_output_length",
)


def _docx_part(name: str) -> bool:
    """The parts python-docx reads for text: XML and relationships, not media or embedded files."""
    return name.endswith((".xml", ".rels"))


def _load_docx(p: Path, budget: Budget) -> tuple[str, str]:
    import zipfile

    import docx
    from docx.opc.exceptions import PackageNotFoundError

    from saber.rag.zipread import read_package

    try:
        document = docx.Document(read_package(p, budget, wanted=_docx_part))
    except (PackageNotFoundError, zipfile.BadZipFile, KeyError, ValueError) as exc:
        reason = "not a zip package" if isinstance(exc, (PackageNotFoundError, zipfile.BadZipFile)) else str(exc)
        raise RagError(f"{p.name}: not a valid .docx file ({reason}); save it again from Word or LibreOffice") from None
    lines: list[str] = []
    title = heading = ""
    for para in document.paragraphs:
        text = para.text.strip()
        if not text:
            continue
        budget.extracted(len(text))
        style = (para.style.name if para.style is not None else "") or ""
        if style == "Title":
            title = title or text
            lines.append(f"# {text}")
        elif style.startswith("Heading"):
            level = int(style.split()[-1]) if style.split()[-1].isdigit() else 1
            heading = heading or (text if level == 1 else "")  # titled by its first heading, as Markdown is
            lines.append("#" * min(level, 6) + " " + text)
        else:
            lines.append(text)
    for table in document.tables:
        lines.append("\n".join("| " + " | ".join(cell.text.strip() for cell in row.cells) + " |" for row in table.rows))
        budget.extracted(len(lines[-1]))
    core_title = (document.core_properties.title or "").strip()
    return core_title or title or heading, "\n\n".join(lines)


_LOADERS: dict[str, Callable[[Path, Budget], tuple[str, str]]] = {
    "txt": _load_txt,
    "md": _load_md,
    "markdown": _load_md,
    "html": _load_html,
    "htm": _load_html,
    "pdf": _load_pdf,
    "docx": _load_docx,
}
SUPPORTED_TYPES = tuple(_LOADERS)


def is_supported(path: str | Path) -> bool:
    return Path(path).suffix.lower().lstrip(".") in _LOADERS
