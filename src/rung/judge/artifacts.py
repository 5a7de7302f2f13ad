"""Artifacts leave the solution's scratch folder once, here, judge-side: what a rung's solution
process wrote (a build's IR, PTX, CUBIN and SASS; a CUPTI trace) is copied, the moment the rung's
request returns, into `<run>/artifacts/<rung>/`, a folder of the run the solution can never write
(its Landlock allows its scratch, shm and cache folders only). Everything after (the controller's
dump and trace rungs, reports, an agent's read_artifact) reads those copies.

A path is copied only from beneath the scratch folder, no link followed at any component, a
regular file, at most MAX_FILE_BYTES (MAX_TOTAL_BYTES for a rung in all); its name is put in the
safe alphabet and made unique (a kernel name with a path separator, `..` or a control character
becomes a plain file name of the copies' folder). Where the build named each file's SHA-256 as it built it, a copy whose
bytes differ is refused: the file changed after the build. Each copy's own SHA-256 is recorded.
Anything refused is named, with why, in the rung's message.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rung.common import copies
from rung.common.safe_files import Refused, open_beneath, read_fd, safe_name, unique_name, write_new

MAX_FILE_BYTES = 256 * 2**20
MAX_TOTAL_BYTES = 1024 * 2**20


@dataclass
class Copied:
    """What one rung's copy-out kept: each original path's copy, each copy's SHA-256, and why
    any path was refused (`name: reason`, the name as it was given, shown safely)."""

    folder: Path
    copies: dict[str, Path] = field(default_factory=dict)
    sha256: dict[str, str] = field(default_factory=dict)  # copy's name -> hash
    refused: list[str] = field(default_factory=list)
    taken: set[str] = field(default_factory=set)

    def refusals(self, rung: str) -> str:
        """The refusals as the rung's message says them, one a line; '' where there were none."""
        return "\n".join(f"{rung}: artifact {why}" for why in self.refused)


def scratch_of(run_dir: Path) -> Path:
    return run_dir / "solution"


def copy_out(
    run_dir: Path, rung: str, paths: list[str], built_sha256: dict[str, str] | None = None
) -> Copied:
    """Copy each of `paths` from the run's scratch folder into `<run>/artifacts/<rung>/`."""
    scratch = scratch_of(run_dir)
    copied = Copied(copies.folder(run_dir, rung))
    total = 0
    for given in dict.fromkeys(paths):
        name = safe_name(Path(given).name)
        try:
            data = read_fd(open_beneath(scratch, given), min(MAX_FILE_BYTES, MAX_TOTAL_BYTES - total))
        except Refused as e:
            if e.reason != "no such file":  # named but never written: nothing to keep, no attack
                copied.refused.append(f"{name} refused: {_reason(e.reason)}")
            continue
        except OSError as e:
            copied.refused.append(f"{name} refused: {os.strerror(e.errno or 0).lower()}")
            continue
        digest = hashlib.sha256(data).hexdigest()
        claimed = (built_sha256 or {}).get(given)
        if built_sha256 is not None and claimed != digest:
            why = "changed after build" if claimed else "not among the files the build hashed"
            copied.refused.append(f"{name} refused: {why}")
            continue
        total += len(data)
        path = write_new(copied.folder / unique_name(name, copied.taken), data)
        copied.copies[given] = path
        copied.sha256[path.name] = digest
    return copied


def _reason(reason: str) -> str:
    if reason.startswith("outside"):
        return "outside the solution's scratch folder"
    return reason


def keep_result(run_dir: Path, result: Any) -> Any:
    """A rung's result with every artifact beneath the scratch folder replaced by its copy (any
    refused named in its message); artifacts the judge wrote elsewhere in the run kept as named."""
    scratch = scratch_of(run_dir)
    inside = [a for a in result.artifacts if Path(a).is_relative_to(scratch)]
    if not inside:
        return result
    copied = copy_out(run_dir, result.name, inside)
    result.artifacts = [str(copied.copies[a]) if a in copied.copies else a for a in result.artifacts]
    result.artifacts = [a for a in result.artifacts if not Path(a).is_relative_to(scratch)]
    if copied.refused:
        result.message = f"{result.message}\n{copied.refusals(result.name)}"
    if copied.sha256:
        result.metrics = {**result.metrics, "artifact_sha256": copied.sha256}
    return result
