"""The size gate holds the tree today and fails on a planted module past its limits."""

from __future__ import annotations

import subprocess
import sys

from tests import size_gate


def test_src_rung_is_within_its_line_budget_and_file_limit():
    assert size_gate.over() == []


def test_a_planted_oversize_module_fails_the_gate(tmp_path):
    src = tmp_path / "rung"
    (src / "judge").mkdir(parents=True)
    (src / "small.py").write_text("x = 1\n" * 10)
    assert size_gate.over(src) == []
    (src / "judge" / "huge.py").write_text("x = 1\n" * (size_gate.FILE_LIMIT + 1))
    assert size_gate.over(src) == [f"rung/judge/huge.py: {size_gate.FILE_LIMIT + 1} lines, over 500"]


def test_a_tree_past_the_line_budget_fails_the_gate(tmp_path):
    src = tmp_path / "rung"
    src.mkdir()
    for i in range(3):
        (src / f"m{i}.py").write_text("x = 1\n" * 40)
    assert size_gate.over(src, budget=120) == []
    (src / "m3.py").write_text("x = 1\n")
    found = size_gate.over(src, budget=120)
    assert len(found) == 1 and "121 lines in all, over the budget of 120" in found[0]


def test_the_script_make_check_runs_exits_nonzero_naming_the_oversize_module(tmp_path):
    src = tmp_path / "rung"
    src.mkdir()
    (src / "ok.py").write_text("x = 1\n")
    gate = [sys.executable, size_gate.__file__, str(src)]
    assert subprocess.run(gate, capture_output=True).returncode == 0
    (src / "huge.py").write_text("x = 1\n" * 501)
    done = subprocess.run(gate, capture_output=True, text=True)
    assert done.returncode == 1 and "rung/huge.py: 501 lines, over 500" in done.stderr
