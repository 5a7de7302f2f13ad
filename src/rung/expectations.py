"""What a problem's wrong versions must fail at: `solutions/wrong/expected.yml`, read as data.

Each entry names a file of that folder: `low_precision.py: {rung: correct, says: "elements
outside", or_first: [guard]}`. A wrong version meets its expectation when the first rung that
failed is the named one and its message contains `says`, or one of `or_first`, rungs that may by
chance fire before it, for reasons of their own: it failed as it must, and a check counts it apart (`xfailed`, as
pytest counts an expected failure) rather than as a failure. One that passed, or failed elsewhere
or for another reason, misses it, and the check says how. One this machine could not check (a
CUDA C++ version with no GPU: unverified) neither meets nor misses it: it is counted as skipped.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from rung.errors import ProblemError
from rung.spec import Outcome, Run

FILE = Path("solutions") / "wrong" / "expected.yml"


@dataclass(frozen=True)
class Expected:
    rung: str
    says: str
    or_first: tuple[str, ...] = ()

    def __str__(self) -> str:
        return f"fails at {' or '.join((self.rung, *self.or_first))} saying {self.says!r}"


def read(problem: Path) -> dict[Path, Expected]:
    """The expectations of `problem`'s wrong versions, by each file's resolved path; {} where the
    problem has no expected.yml. A ProblemError names the file and the entry that is malformed."""
    path = problem / FILE
    if not path.is_file():
        return {}
    try:
        table = yaml.safe_load(path.read_text()) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
        raise ProblemError(f"{path}: not readable as YAML: {e}") from None
    if not isinstance(table, dict):
        raise ProblemError(f"{path}: a mapping of file names to {{rung, says}} is expected")
    found = {}
    for name, entry in table.items():
        ok = (
            isinstance(entry, dict)
            and isinstance(entry.get("rung"), str)
            and isinstance(entry.get("says"), str)
        )
        firsts = entry.get("or_first", []) if isinstance(entry, dict) else None
        if not ok or not isinstance(firsts, list) or not all(isinstance(f, str) for f in firsts):
            raise ProblemError(
                f"{path}: {name}: expected {{rung: <rung>, says: <words>, or_first: [<rungs>]}}"
            )
        found[(path.parent / str(name)).resolve()] = Expected(entry["rung"], entry["says"], tuple(firsts))
    return found


def missed(run: Run, expected: Expected) -> str:
    """'' where `run` failed as `expected` says (or could not be checked here); else how it did not."""
    if run.outcome == Outcome.UNVERIFIED:
        return ""
    first = next((r for r in run.rungs if r.status.bad), None)
    if first is None:
        return f"expected.yml: {expected}; it passed"
    if first.name in expected.or_first or (first.name == expected.rung and expected.says in first.message):
        return ""  # a rung that may fire first fires for its own reason, in its own words
    return f"expected.yml: {expected}; it failed at {first.name}"
