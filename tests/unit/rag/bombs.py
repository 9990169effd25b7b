"""Decompression bombs built for the tests: a .docx whose document.xml inflates to hundreds of MB,
the same with a forged (understated) size in its zip headers, and a PDF with a huge FlateDecode stream."""

from __future__ import annotations

import struct
import zipfile
import zlib
from pathlib import Path

MB = 1024 * 1024
_HEAD = (b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
         b'<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>'
         b'<w:p><w:r><w:t xml:space="preserve">bomb ')
_TAIL = b"</w:t></w:r></w:p></w:body></w:document>"


def docx_bomb(path: Path, inflated_mb: int = 200, *, filler: bytes = b" ") -> Path:
    """A real .docx (python-docx's template) whose document.xml is ``inflated_mb`` MB, mostly ``filler``."""
    import docx

    template = path.with_suffix(".template.docx")
    docx.Document().save(str(template))
    with zipfile.ZipFile(template) as src, zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as out:
        for info in src.infolist():
            if info.filename != "word/document.xml":
                out.writestr(info.filename, src.read(info))
                continue
            with out.open("word/document.xml", "w", force_zip64=False) as stream:
                stream.write(_HEAD)
                block = filler * MB
                for _ in range(inflated_mb):
                    stream.write(block)
                stream.write(_TAIL)
    template.unlink()
    return path


def forge_size(path: Path, member: str, size: int) -> None:
    """Overwrite ``member``'s uncompressed size in its local header and its central directory entry."""
    with zipfile.ZipFile(path) as z:
        info = z.getinfo(member)
    data = bytearray(path.read_bytes())
    assert data[info.header_offset:info.header_offset + 4] == b"PK\x03\x04"
    struct.pack_into("<I", data, info.header_offset + 22, size)
    name = member.encode()
    position = data.find(b"PK\x01\x02")
    while position >= 0:
        name_length = struct.unpack_from("<H", data, position + 28)[0]
        if bytes(data[position + 46:position + 46 + name_length]) == name:
            struct.pack_into("<I", data, position + 24, size)
            break
        position = data.find(b"PK\x01\x02", position + 4)
    else:
        raise AssertionError(f"{member} not in the central directory")
    path.write_bytes(bytes(data))


def pdf_bomb(path: Path, inflated_mb: int = 200) -> Path:
    """A one-page PDF whose content stream (FlateDecode) inflates to ``inflated_mb`` MB."""
    compressor = zlib.compressobj(9)
    parts = [compressor.compress(b"BT /F1 12 Tf 20 100 Td (bomb) Tj ET\n")]
    block = b" " * MB
    parts += [compressor.compress(block) for _ in range(inflated_mb)]
    parts.append(compressor.flush())
    stream = b"".join(parts)
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 300 200] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    path.write_bytes(bytes(out))
    return path


def many_pages_pdf(path: Path, pages: int) -> Path:
    """A valid PDF of ``pages`` pages of text: slow to read whole (pypdf extracts page by page)."""
    font = pages * 2 + 3
    objects: dict[int, bytes] = {
        1: b"<< /Type /Catalog /Pages 2 0 R >>",
        2: b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(b"%d 0 R" % (3 + 2 * i) for i in range(pages)), pages),
        font: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    }
    for i in range(pages):
        text = b"BT /F1 9 Tf 20 180 Td " + b"".join(b"(page %d line %d of the report) Tj 0 -10 Td " % (i, j)
                                                     for j in range(15)) + b"ET"
        objects[3 + 2 * i] = (b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 300 200] /Contents %d 0 R "
                              b"/Resources << /Font << /F1 %d 0 R >> >> >>" % (4 + 2 * i, font))
        objects[4 + 2 * i] = b"<< /Length %d >>\nstream\n" % len(text) + text + b"\nendstream"
    out = bytearray(b"%PDF-1.4\n")
    offsets = {}
    for number in sorted(objects):
        offsets[number] = len(out)
        out += b"%d 0 obj\n" % number + objects[number] + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (font + 1)
    out += b"".join(b"%010d 00000 n \n" % offsets[n] for n in range(1, font + 1))
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (font + 1, xref)
    path.write_bytes(bytes(out))
    return path
