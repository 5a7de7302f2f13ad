"""A page of a text file inside a workspace: how MCP's read_artifact and the llm agent's
read_artifact tool read a run's PTX, SASS, logs and reports, whose size is not bounded while an
agent's context is.

A page never splits a UTF-8 character, a binary file is refused (its text forms are kept beside
it), and a path that resolves, symlinks followed, outside the workspace is refused.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from rung.errors import UsageError
from rung.spec import SCHEMA

MAX_ARTIFACT_BYTES = 200_000  # the largest page returned


def read_page(root: Path, path: str, offset: int, length: int) -> dict[str, Any]:
    """`length` bytes of `path` from `offset`, ended early at a character's start so no UTF-8
    character is split between pages."""
    target = (root / path).resolve()
    if not target.is_relative_to(root):
        raise UsageError(f"{path}: outside the workspace {root}; only files inside it can be read")
    if not target.is_file():
        raise UsageError(f"{path}: no such file in the workspace {root}")
    if offset < 0 or not 0 < length <= MAX_ARTIFACT_BYTES:
        raise UsageError(f"{path}: read from offset >= 0, 1 to {MAX_ARTIFACT_BYTES} bytes at a time")
    try:  # resolved above; a link or FIFO swapped in since (a scratch folder's) is still refused
        fd = os.open(target, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        raise UsageError(f"{path}: cannot be read ({os.strerror(e.errno or 0).lower()})") from None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UsageError(f"{path}: not a regular file")
        size = info.st_size
        f.seek(offset)
        data = f.read(length)
    if b"\0" in data:
        raise UsageError(f"{path}: a binary file ({size} bytes); read its text forms (PTX, SASS) instead")
    end = offset + len(data)
    if end < size:
        data = whole_characters(data)
        end = offset + len(data)
    return {
        "schema": SCHEMA,
        "path": path,
        "offset": offset,
        "length": len(data),
        "total_bytes": size,
        "next_offset": end if end < size else None,
        "text": data.decode(errors="replace"),
    }


def whole_characters(data: bytes) -> bytes:
    """`data` less the start of a UTF-8 character cut at its end (1 to 3 bytes), where that is
    what keeps it from decoding; as it is otherwise."""
    for cut in range(4):
        page = data[: len(data) - cut]
        try:
            page.decode()
            return page
        except UnicodeDecodeError:
            continue
    return data
