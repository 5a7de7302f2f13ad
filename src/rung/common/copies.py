"""Where a run keeps what left the solution's scratch folder: `<run>/artifacts/<rung>/`, written
by the judge (`judge/artifacts.py`) and read by the controller's rungs (dump, trace, reports).

The solution can never write there (its Landlock allows its scratch, shm and cache folders), and
the copies' names are in the safe alphabet. A reader still takes only paths of this shape and
opens them beneath the run's folder without following a link (`safe_files`), so a path recorded
anywhere else (an older run's scratch file, a name edited in the store) is never opened.
"""

from __future__ import annotations

from pathlib import Path

from rung.common.safe_files import Refused, own_folder, read_beneath, safe_name

FOLDER = "artifacts"


def folder(run_dir: Path, rung: str) -> Path:
    """`<run>/artifacts/<rung>/`, made here (an existing link there is refused)."""
    return own_folder(own_folder(run_dir / FOLDER) / safe_name(rung))


def run_of(copy: str | Path) -> Path | None:
    """The run folder of a copy `<run>/artifacts/<rung>/<name>`; None for any other path."""
    path = Path(copy)
    if len(path.parents) < 3 or path.parents[1].name != FOLDER or safe_name(path.name) != path.name:
        return None
    return path.parents[2]


def read_copy(copy: str | Path, limit: int) -> bytes:
    """The bytes of a copy, no link followed below its run folder; Refused for any other path."""
    run_dir = run_of(copy)
    if run_dir is None:
        raise Refused(f"not a copy in a run's {FOLDER}/ folder")
    return read_beneath(run_dir, copy, limit)
