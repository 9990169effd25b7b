"""A zip package (.docx) read member by member within a ``Budget``.

Each member's sizes are taken from the central directory and checked before it is opened (its
inflated size against what is left of ``rag_max_inflated_mb``, its ratio against
``rag_max_ratio``); then its bytes are counted as they inflate, since a forged header can
understate them: reading stops one chunk past the declared size. Members the text does not
need (images, embedded files, fonts) are never inflated: the copy handed to the parser holds
them empty.
"""

from __future__ import annotations

import copy
import io
import zipfile
from collections.abc import Callable
from pathlib import Path

from saber.rag.documents import RagError
from saber.rag.limits import Budget

CHUNK = 1 << 20
MAX_MEMBERS = 10_000


def read_package(path: Path, budget: Budget, *, wanted: Callable[[str], bool]) -> io.BytesIO:
    """An in-memory copy of the zip at ``path`` (stored, not compressed): the ``wanted`` members
    inflated within ``budget``, the others empty. Raises LimitExceeded, IngestCancelled, RagError
    (a forged header) or zipfile.BadZipFile."""
    out = io.BytesIO()
    with zipfile.ZipFile(path) as package, zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as copied:
        members = package.infolist()
        if len(members) > MAX_MEMBERS:
            raise RagError(f"{budget.name}: {len(members):,} zip members, more than {MAX_MEMBERS:,}")
        needed = [m for m in members if wanted(m.filename) and not m.is_dir()]
        declared = Budget(budget.name, budget.limits)  # the central directory's sizes, before opening anything
        for member in needed:
            declared.declare(member.filename, member.file_size, member.compress_size)
            declared.inflated += member.file_size
        inflated = {id(m) for m in needed}
        for member in members:
            if not member.is_dir():
                copied.writestr(member.filename, _inflate(package, member, budget) if id(member) in inflated else b"")
    out.seek(0)
    return out


def _inflate(package: zipfile.ZipFile, member: zipfile.ZipInfo, budget: Budget) -> bytes:
    probe = copy.copy(member)
    probe.file_size = member.file_size + CHUNK  # let zipfile read past an understated size, so it is seen
    data = bytearray()
    with package.open(probe) as stream:
        while chunk := stream.read(CHUNK):
            data += chunk
            if len(data) > member.file_size:
                raise RagError(f"{budget.name}: {member.filename} inflates past the {member.file_size:,} bytes its "
                               "zip header declares (a forged or corrupt file)")
            budget.inflate(member.filename, len(chunk), so_far=len(data), compressed=member.compress_size)
    return bytes(data)
