"""The build cache: compiled kernels kept by the hash of everything that decides their bytes.

A build is a folder of files (the source as compiled, PTX, CUBIN, the compiler's log) under
`<root>/<kind>/<key[:2]>/<key>/`, where the key hashes the source, the flags, the arch and the
toolchain's version: change any and it is built again; change none and the second check of a
solution copies the files instead of compiling (seconds of nvcc become milliseconds).

Where the root is: `RUNG_CACHE_DIR/builds` where that knob is set (shared by every workspace),
else `.rung/cache/builds` of the workspace a run belongs to (per workspace, so that deleting
`.rung` forgets it), else a `cache` folder in the run's own folder. The judge works the root out
(`for_run`) and tells the solution process (`use`), which builds but reads no knobs.

Trust: the cache is written by solution processes (they build), so it is as trustworthy as
Triton's own cache they also write: a solution could plant files under another key. What the
cache holds feeds the compile and dump rungs' figures, never a verdict of correctness or speed.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

from rung import knobs

_root: Path | None = None  # set by the solution process from the judge's request


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
    `meta.json` exists: `store` writes that last and moves the folder in whole."""
    found = folder(kind, digest)
    return found if (found / "meta.json").is_file() else None


def store(kind: str, digest: str, files: dict[str, Path], meta: dict[str, object]) -> Path:
    """Keep `files` (name in the cache -> file now) and `meta` under `digest`; return the folder.

    Built in a temporary folder beside it and renamed into place, so a reader never sees half a
    build; where another process stored the same key first, theirs is kept (same inputs, same
    bytes)."""
    final = folder(kind, digest)
    final.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{digest[:8]}-", dir=final.parent))
    try:
        for name, path in files.items():
            shutil.copyfile(path, staging / name)
        (staging / "meta.json").write_text(json.dumps(meta))
        try:
            os.rename(staging, final)
        except OSError:  # there already: a concurrent build of the same key won
            shutil.rmtree(staging, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return final


def meta(found: Path) -> dict[str, object]:
    return dict(json.loads((found / "meta.json").read_text()))
