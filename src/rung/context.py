"""`rung context`: a full-text index of documentation and example code, `.rung/context.db`.

A source is a file, a folder, or an installed module or package (located without importing
it); its text files (Markdown, reStructuredText, text, Python, CUDA, C++ headers, PTX) are cut
into snippets of about 40 lines that overlap by a few, Python preferably at a top-level `def` or
`class`, and kept in an SQLite FTS5 table. Adding a source again replaces its snippets. The
built-in sources (`context_sources.BUILTINS`) are the kernel languages' own packages, where
installed, and the CUDA toolkit's PTX and runtime headers, where a toolkit is found.

A query is free text, as people and agents write it (`tl.dot`, `num_warps=8`, `cp.async.bulk`):
every whitespace-separated word is quoted, so FTS5 reads it as a phrase of its tokens and never
as syntax. The snippets holding every word are the answer; when none does, those holding any
word; when none does, those holding any token of the query (`tl.dot` falls back to `tl` or
`dot`). Each is ranked by bm25 (a snippet's `score` is minus bm25: higher is better).
"""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from rung.context_sources import builtin_sources, locate
from rung.errors import StoreError, UsageError

SUFFIXES = {".md", ".rst", ".txt", ".py", ".cu", ".cuh", ".h", ".hpp", ".cpp", ".ptx"}
MAX_FILE_BYTES = 2 * 1024 * 1024
CHUNK_LINES = 40
OVERLAP_LINES = 5
TOP_LEVEL = re.compile(r"(def |async def |class |@)")

SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS sources (name TEXT PRIMARY KEY, snippets INTEGER NOT NULL);
CREATE VIRTUAL TABLE IF NOT EXISTS snippets USING fts5(
    text, path UNINDEXED, line UNINDEXED, source UNINDEXED, tokenize = 'porter unicode61'
);
"""


@dataclass
class Snippet:
    """Some 40 lines of one file, as a search found them."""

    path: str
    line: int  # 1-based, of the snippet's first line
    text: str
    score: float  # minus bm25: higher is better
    source: str  # the file, folder or package it was added from


class ContextIndex:
    """The snippets of every added source, in the workspace's `.rung/context.db`."""

    def __init__(self, workspace_root: Path) -> None:
        path = workspace_root / ".rung" / "context.db"
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(path, timeout=30)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.executescript(SCHEMA_SQL)
        except (OSError, sqlite3.Error) as e:
            why = "this Python's SQLite has no FTS5" if "fts5" in str(e) else str(e)
            raise StoreError(f"cannot open the context index {path}: {why}") from None

    def add(self, target: str) -> int:
        """Index `target` (a file or folder if one exists, else an installed package); its snippet count."""
        path = Path(target).resolve()
        if path.exists():
            return self.add_roots(str(path), [path])
        found = locate(target)
        if found is None:
            raise UsageError(f"{target}: no such file, folder or installed package")
        return self.add_roots(target, found)

    def add_roots(self, source: str, roots: list[Path]) -> int:
        """Index the files under `roots` as `source`, replacing what it held; its snippet count."""
        rows = [
            (text, str(path), line, source)
            for root in roots
            for path in _files(root)
            for line, text in _chunks(path)
        ]
        with self.db:
            self.db.execute("DELETE FROM snippets WHERE source = ?", (source,))
            self.db.executemany("INSERT INTO snippets VALUES (?, ?, ?, ?)", rows)
            self.db.execute("INSERT OR REPLACE INTO sources VALUES (?, ?)", (source, len(rows)))
        return len(rows)

    def add_builtins(self) -> dict[str, int]:
        """Index the built-in sources present here: each one's snippet count; those absent are left out."""
        return {name: self.add_roots(name, roots) for name, roots in builtin_sources().items()}

    def search(self, query: str, limit: int = 8) -> list[Snippet]:
        """The best `limit` snippets for `query`: holding every word, else any word, else any token."""
        words = query.replace("\0", " ").split()
        if not words:
            raise UsageError("empty query: say what to search for")
        phrases = ['"' + w.replace('"', '""') + '"' for w in words if re.search(r"\w", w)]
        if not phrases:
            return []
        tokens = " OR ".join(f'"{t}"' for t in re.findall(r"\w+", query))
        for expression in (" AND ".join(phrases), " OR ".join(phrases), tokens):
            found = self._match(expression, limit)
            if found:
                return found
        return []

    def _match(self, expression: str, limit: int) -> list[Snippet]:
        rows = self.db.execute(
            "SELECT path, line, text, bm25(snippets), source FROM snippets WHERE snippets MATCH ?"
            " ORDER BY bm25(snippets) LIMIT ?",
            (expression, limit),
        )
        return [Snippet(path, line, text, -rank, source) for path, line, text, rank, source in rows]

    def sources(self) -> list[tuple[str, int]]:
        """Every added source with its snippet count, by name."""
        return list(self.db.execute("SELECT name, snippets FROM sources ORDER BY name"))

    def close(self) -> None:
        self.db.close()


def _files(root: Path) -> Iterator[Path]:
    """`root` itself if a file; else its text files by SUFFIXES, skipping hidden folders and caches."""
    if root.is_file():
        yield root
        return
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__")
        for name in sorted(names):
            if Path(name).suffix.lower() in SUFFIXES:
                yield Path(folder) / name


def _chunks(path: Path) -> Iterator[tuple[int, str]]:
    """(first line, text) of each snippet of a text file; nothing for a binary or too large file."""
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return
        data = path.read_bytes()
    except OSError:
        return
    if b"\0" in data[:8192]:
        return
    lines = data.decode("utf-8", errors="replace").splitlines()
    python = path.suffix == ".py"
    start = 0
    while start < len(lines):
        end = min(start + CHUNK_LINES, len(lines))
        cut = _top_level_cut(lines, start, end) if python and end < len(lines) else None
        text = "\n".join(lines[start : cut or end])
        if text.strip():
            yield start + 1, text
        if cut:
            start = cut
        elif end == len(lines):
            return
        else:
            start = end - OVERLAP_LINES


def _top_level_cut(lines: list[str], start: int, end: int) -> int | None:
    """The last top-level def, class or decorator line in the second half of lines[start:end]."""
    half = start + CHUNK_LINES // 2
    cut = next((i for i in range(end, half, -1) if TOP_LEVEL.match(lines[i])), None)
    while cut and cut - 1 > half and lines[cut - 1].startswith("@"):
        cut -= 1
    return cut
