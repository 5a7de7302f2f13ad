"""`rung hint` and the optimize command's steering flags on the command line: hints and pause as
files the loop reads (the loop's side is tests/test_agent_loop.py), `--from RUN`, the repair
setting and a pinned language, each bad value one line, exit code 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from rung.steer import Steering
from tests.conftest import FIXTURES

TINY = FIXTURES / "tiny"


def rung(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rung", *args], capture_output=True, text=True, timeout=300, cwd=cwd
    )


def test_hints_pause_and_resume_are_files_the_loop_reads(tmp_path):
    (tmp_path / ".rung").mkdir()
    ws = ["-w", str(tmp_path)]
    assert rung("hint", str(TINY), "try TMA loads", *ws).returncode == 0
    assert rung("hint", str(TINY), "--pause", *ws).returncode == 0
    steering = Steering(tmp_path, "tiny")
    assert steering.new_hints() == ["try TMA loads"] and steering.paused
    listed = rung("hint", "tiny", *ws).stdout
    assert "- try TMA loads" in listed and "tiny: paused" in listed
    assert rung("hint", str(TINY), "--resume", "--clear", *ws).returncode == 0
    assert not steering.paused and steering.hints() == []
    nowhere = rung("hint", str(TINY), "x", cwd=tmp_path.parent)
    assert nowhere.returncode == 2 and "no rung workspace" in nowhere.stderr


def test_optimize_from_a_stored_run_and_its_usage_errors(tmp_path):
    ws = ["-w", str(tmp_path)]
    checked = rung("check", str(TINY), str(TINY / "solutions" / "wrong_shape.py"), "--json", *ws)
    assert json.loads(checked.stdout)["solutions"][0]["run"] == 1
    base = ["optimize", str(TINY), "--agent", "replay", "--replay", str(TINY / "solutions" / "good.py")]
    gave_up = rung("--repair-turns", "0", *base, "--from", "1", "--json", *ws)
    doc = json.loads(gave_up.stdout)
    assert gave_up.returncode == 1 and doc["reason"].startswith("the starting version does not pass")
    assert doc["best"]["run"] == 1 and doc["candidates"] == []  # the stored run, not climbed again
    for extra, says in [
        (["--from", "7"], "no run 7"),
        (["--from", "nope.py"], "nope.py: no such solution file"),
        (["--from", "1", "--backend", "fortran"], "--backend fortran: not a kernel language"),
    ]:
        done = rung(*base, *extra, *ws)
        assert done.returncode == 2 and says in done.stderr and len(done.stderr.splitlines()) == 1, (
            done.stderr
        )
