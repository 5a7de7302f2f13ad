"""The build cache: compiled kernels kept by the hash of everything that decides their bytes.

A build is a folder of files (the source as compiled, PTX, CUBIN, the compiler's log) under
`<root>/<kind>/<key[:2]>/<key>/`, where the key hashes the source, the flags, the arch and the
toolchain's version: change any and it is built again; change none and the second check of a
solution copies the files instead of compiling (seconds of nvcc become milliseconds). A build is
made in a staging folder of its own and renamed into place whole (`staging`), so checks that
build at once, whatever their sources and names, never see each other's half-made files.

Where the root is: `RUNG_CACHE_DIR/builds` where that knob is set (shared by every workspace),
else `.rung/cache/builds` of the workspace a run belongs to (per workspace, so that deleting
`.rung` forgets it), else a `cache` folder in the run's own folder. The judge works the root out
(`for_run`) and tells the solution process (`use`), which builds but reads no knobs.

Trust: the cache is written by solution processes (they build), so it is as trustworthy as
Triton's own cache they also write: a solution could plant files under another key. What the
cache holds feeds the compile and dump rungs' figures, and (torch's extension libraries,
`torch_builds`) code a solution process runs, whose outputs the judge checks as any other's.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from rung import knobs

_root: Path | None = None  # set by the solution process from the judge's request
STAGING = ".staging-"  # a build under way: never read, removed when done or once stale
STALE_S = 6 * 3600  # no build takes this long: a staging folder this old was killed mid-build


def for_run(run_dir: Path) -> Path:
    """The cache root for a run whose artifacts live in `run_dir` (judge side: reads the knob)."""
    configured = str(knobs.get("RUNG_CACHE_DIR"))
    if configured:
        return Path(configured) / "builds"
    workspace = next((p for p in run_dir.resolve().parents if p.name == ".rung"), None)
    return workspace / "cache" / "builds" if workspace else run_dir / "cache"


def use(root: Path) -> None:
    """Build into `root` from now on (the solution process, told by the judge)."""
    global _root
    _root = root


def root() -> Path:
    """The root in use: the one `use` set, else the knob's, else ~/.cache/rung/builds."""
    if _root is not None:
        return _root
    return knobs.cache_dir() / "builds"


def key(*parts: object) -> str:
    """A hex digest of `parts` (strings, numbers, lists of them), order included."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def folder(kind: str, digest: str) -> Path:
    return root() / kind / digest[:2] / digest


def lookup(kind: str, digest: str) -> Path | None:
    """The folder of a finished build under `digest`, or None. A folder is finished once its
    `meta.json` exists: `staging` writes that last and moves the folder in whole."""
    found = folder(kind, digest)
    return found if (found / "meta.json").is_file() else None


def store(kind: str, digest: str, files: dict[str, Path], meta: dict[str, object]) -> Path:
    """Keep `files` (name in the cache -> file now) and `meta` under `digest`; return the folder."""
    with staging(kind, digest) as (work, kept):
        for name, path in files.items():
            shutil.copyfile(path, work / name)
        kept.update(meta)
    return folder(kind, digest)


@contextmanager
def staging(kind: str, digest: str) -> Iterator[tuple[Path, dict[str, object]]]:
    """A folder to build `digest` in that no other process writes, and the meta to keep with it.

    On success it is published whole: `meta.json` written last, then the folder renamed into
    place, so a reader sees a whole build or none (where another process published the same key
    first, theirs is kept: same inputs, same bytes). On failure it is removed. A process killed
    mid-build leaves its staging folder, which no reader ever opens (a lock file of the build's
    inside it included) and the next build of its kind removes once `STALE_S` old."""
    final = folder(kind, digest)
    final.parent.mkdir(parents=True, exist_ok=True)
    _sweep(final.parent.parent)
    work = Path(tempfile.mkdtemp(prefix=f"{STAGING}{digest[:8]}-", dir=final.parent))
    meta: dict[str, object] = {}
    try:
        yield work, meta
        (work / "meta.json").write_text(json.dumps(meta))
        try:
            os.rename(work, final)
        except OSError:  # there already: a concurrent build of the same key won
            shutil.rmtree(work, ignore_errors=True)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise


def _sweep(kind_folder: Path) -> None:
    """Remove staging folders of a kind older than STALE_S: builds killed before they ended."""
    cutoff = time.time() - STALE_S
    for left in kind_folder.glob(f"*/{STAGING}*"):
        with suppress(OSError):
            if left.lstat().st_mtime < cutoff and not left.is_symlink():
                shutil.rmtree(left)


def meta(found: Path) -> dict[str, object]:
    return dict(json.loads((found / "meta.json").read_text()))
