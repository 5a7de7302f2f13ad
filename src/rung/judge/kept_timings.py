"""Timings of the reference and of the torch.compile baseline, kept across checks (judge side).

Neither depends on the solution: the reference's time on a case and a GPU is the same for every
version an optimize loop checks, and torch.compile of the reference costs seconds per shape. So
the first check of a problem on a GPU times them and later checks reuse the figure, marked
`kept` with when and where it was measured (RUNG_KEEP_TIMINGS=0 times them in every check). The
key holds everything that decides the figure: the bytes of the problem's files, the case, the
number of input sets rotated, the GPU (model and UUID), torch's and Triton's versions, and how
rung times (the policy, the flush, METHOD).

The file is `timings.json` in the cache folder, which no solution process may write: a figure
a solution could plant would set its own speed-up. Where the folder is one the solution
process may write (a cache folder configured inside one of its own), nothing is kept or reused.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import triton

from rung import knobs

METHOD = 2  # how the kept figures were measured; a change of the protocol bumps it (2: events headline)
MAX_ENTRIES = 4096  # the oldest go first: a cache, not a record (the runs hold the record)
MAX_FILE_BYTES = 2**20  # a problem's files above this size are hashed by size and time only
DROPPED = ("raw_ms", "batches")  # per-sample figures: the run that measured them keeps them


def path() -> Path:
    return knobs.cache_dir() / "timings.json"


def problem_digest(problem_path: Path) -> str:
    """A digest of the files that define a problem: the file itself, or every file at the top of
    its folder, and the Python files one level up (GPU MODE's shared helpers live there)."""
    p = problem_path.resolve()
    files = [p] if p.is_file() else sorted(f for f in p.iterdir() if f.is_file())
    files += sorted(p.parent.glob("*.py")) if p.is_dir() else []
    h = hashlib.sha256()
    for f in files:
        h.update(str(f.name).encode())
        stat = f.stat()
        h.update(
            f.read_bytes()
            if stat.st_size <= MAX_FILE_BYTES
            else f"{stat.st_size}:{stat.st_mtime_ns}".encode()
        )
    return h.hexdigest()


def key(
    what: str, problem_path: Path, case: dict[str, Any], input_sets: int, settings: dict[str, Any]
) -> str:
    """The key of one figure: `what` is timed ('reference' or 'compile'), `settings` the timing
    policy and flush as the judge used them (`settings`)."""
    props = torch.cuda.get_device_properties(0)
    parts = {
        "what": what,
        "problem": problem_digest(problem_path),
        "case": case,
        "input_sets": input_sets,
        "device": [props.name, str(getattr(props, "uuid", ""))],
        "versions": [torch.__version__, str(torch.version.cuda), triton.__version__],
        "settings": settings,
        "method": METHOD,
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def usable(writable_by_solution: list[str]) -> bool:
    """Whether kept timings may be used: the knob allows it and no solution process may write
    the file."""
    if not knobs.get("RUNG_KEEP_TIMINGS"):
        return False
    target = path().resolve()
    return not any(target.is_relative_to(Path(w).resolve()) for w in writable_by_solution if w)


def timing(k: str, run_dir: Path, measure: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """The kept figure under `k`, else `measure()` now, kept for the next check (an error is
    not kept: the next check tries again)."""
    table = _read()
    entry = table.get(k)
    if entry:
        return {**entry["figure"], "kept": {"measured_at": entry["measured_at"], "run": entry["run"]}}
    figure = measure()
    if "error" not in figure and "median_ms" in figure:
        table[k] = {
            "figure": {n: v for n, v in figure.items() if n not in DROPPED},
            "measured_at": time.strftime("%Y-%m-%d %H:%M:%S"),
            "run": str(run_dir),
        }
        _write(table)
    return figure


def settings(policy: Any, flush_bytes: int) -> dict[str, Any]:
    """The timing settings that decide a figure, for `key`."""
    return {"policy": dataclasses.asdict(policy), "flush_bytes": flush_bytes}


def _read() -> dict[str, Any]:
    try:
        table = json.loads(path().read_text())
    except (OSError, ValueError):
        return {}
    return table if isinstance(table, dict) else {}


def _write(table: dict[str, Any]) -> None:
    """Atomically (a rename), so a judge reading at the same time sees the old or the new file."""
    if len(table) > MAX_ENTRIES:
        newest = sorted(table.items(), key=lambda kv: kv[1].get("measured_at", ""))[-MAX_ENTRIES:]
        table = dict(newest)
    target = path()
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".timings.")
    with os.fdopen(fd, "w") as f:
        json.dump(table, f)
    os.replace(tmp, target)
