"""A check's progress for `rung mcp`: rungs ended and cases done become updates whose progress
only grows; a silence as long as HEARTBEAT_S gets a heartbeat naming the rung still running; a
line the judge is still writing is read once it is whole."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rung.ladder import NAMES
from rung.mcp_progress import HEARTBEAT_S, CheckProgress
from rung.spec import Device, Run, RungResult, Solution, Status


def _run(run_id: int) -> Run:
    return Run(
        run_id, "tiny", Solution("/w/problems/tiny/solutions/good.py", "a" * 64), Device("cpu", "cpu"), 1
    )


def _case(root: Path, run_id: int, rung: str, done: int, total: int, whole: bool = True) -> None:
    folder = root / "runs" / str(run_id)
    folder.mkdir(parents=True, exist_ok=True)
    line = json.dumps({"rung": rung, "done": done, "total": total, "case": {"n": done}})
    with (folder / "progress.jsonl").open("a") as f:
        f.write(line + "\n" if whole else line[:10])


def test_rungs_and_cases_are_updates_that_only_grow(tmp_path):
    progress = CheckProgress(tmp_path, solutions=2)
    assert progress.total == 2 * len(NAMES)
    assert progress.next_update(0.0) is None  # nothing yet, and no silence long enough
    progress.rung_done(_run(1), RungResult("load", Status.OK, "custom_kernel found\nmore"))
    assert progress.next_update(0.0) == (1.0, "run 1 good.py: load OK custom_kernel found")
    _case(tmp_path, 1, "correct", 1, 4)
    _case(tmp_path, 1, "correct", 2, 4)
    value, message = progress.next_update(0.0) or (0.0, "")
    assert value == 1.5
    assert message == "run 1: correct case 1 of 4 {'n': 1}; run 1: correct case 2 of 4 {'n': 2}"
    _case(tmp_path, 1, "correct", 3, 4, whole=False)  # the judge is still writing it
    assert progress.next_update(0.0) is None


def test_a_long_silence_gets_a_heartbeat_naming_the_rung_still_running(tmp_path):
    progress = CheckProgress(tmp_path, solutions=1)
    assert progress.next_update(HEARTBEAT_S) == (0.001, "starting the first judge")
    for name in NAMES[:3]:
        progress.rung_done(_run(4), RungResult(name, Status.OK))
    first = progress.next_update(0.0)
    assert first is not None and first[0] == 3.0
    beats = [progress.next_update(HEARTBEAT_S) for _ in range(2)]
    assert [b[1] for b in beats if b] == [f"run 4: {NAMES[3]} still running"] * 2
    assert [b[0] for b in beats if b] == pytest.approx([3.001, 3.002])
