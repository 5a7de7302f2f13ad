"""rung's cache folder (`knobs.cache_dir()`): what it holds, and clearing it (`rung cache`).

Only the entries rung writes there are ever listed or removed, by name: RUNG_CACHE_DIR may name
a folder that holds other things (a home folder, a shared scratch), and `clear` must not touch
them. A symbolic link among the entries is unlinked, never followed.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from rung import knobs

# What rung writes in its cache folder: devices.cache_path, judge.kept_timings.path (and the
# temporary files it replaces timings.json with), backends.build_cache's builds/.
ENTRIES = ("devices.json", "timings.json", "builds")
TEMPORARY = ".timings.*"


@dataclass(frozen=True)
class Entry:
    path: Path
    bytes: int
    files: int


def entries(folder: Path | None = None) -> list[Entry]:
    """rung's entries in its cache folder that exist, with their sizes."""
    root = folder or knobs.cache_dir()
    paths = [root / name for name in ENTRIES] + sorted(root.glob(TEMPORARY))
    return [_measure(p) for p in paths if p.is_symlink() or p.exists()]


def _measure(path: Path) -> Entry:
    if path.is_symlink() or path.is_file():
        return Entry(path, path.lstat().st_size, 1)
    files = [f for f in path.rglob("*") if f.is_file() and not f.is_symlink()]
    return Entry(path, sum(f.stat().st_size for f in files), len(files))


def clear(folder: Path | None = None) -> list[Entry]:
    """Remove rung's entries from its cache folder; what was removed."""
    removed = entries(folder)
    for entry in removed:
        if entry.path.is_symlink() or entry.path.is_file():
            entry.path.unlink()
        else:
            shutil.rmtree(entry.path)  # does not follow links inside: they are unlinked
    return removed
