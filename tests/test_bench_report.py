"""bench/report.py's backends table, from the files gpu_suite.sh's backends stage writes: one full
check per solution, one compile-only check per example, and a check cut at its cap (empty)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))

import report


def _solution(path: str, verdict: str, build_s: float, cases: list[dict[str, object]] | None = None) -> dict:
    rungs = [
        {"name": "load", "status": "OK", "message": "", "metrics": {"backend": "cute"}},
        {
            "name": "compile",
            "status": "OK",
            "message": "",
            "metrics": {"build_s": build_s, "max_registers": 168},
        },
    ]
    if cases is not None:
        rungs.append({"name": "bench", "status": "OK", "message": "", "metrics": {"cases": cases}})
        rungs.append(
            {
                "name": "roofline",
                "status": "OK",
                "message": "",
                "metrics": {"cases": [{"pct_of_roofline": 0.81}]},
            }
        )
    if verdict != "PASS":
        rungs.append(
            {"name": "correct", "status": "FAILED", "message": "tail elements unwritten", "metrics": {}}
        )
    return {"path": path, "verdict": verdict, "rungs": rungs}


def _write(folder: Path, name: str, solutions: list[dict]) -> None:
    (folder / name).write_text(json.dumps({"problem": "matmul", "solutions": solutions}))


def test_backends_table_joins_each_solutions_check_with_the_cached_build(tmp_path):
    right, wrong = "problems/matmul/solutions/correct/cute.py", "problems/matmul/solutions/wrong/cute_bad.py"
    _write(
        tmp_path,
        "check_matmul_cute_backends.json",
        [_solution(right, "PASS", 21.5, [{"case": "8192", "median_ms": 1.9}])],
    )
    _write(tmp_path, "check_matmul_cute_bad_backends.json", [_solution(wrong, "FAIL", 20.0)])
    (tmp_path / "check_matmul_cuda_backends.json").write_text("")  # cut at the cap
    _write(
        tmp_path,
        "cached_matmul_backends.json",
        [_solution(right, "SKIPPED", 0.18), _solution(wrong, "SKIPPED", 0.2)],
    )
    table = "\n".join(report.backends(tmp_path))
    assert "| matmul | cute.py | cute | PASS | 21.50 | 0.18 | 168 | 8192 | 1900.0 | 81% |" in table
    assert "| matmul | cute_bad.py | cute | FAIL | 20.00 | 0.20 | 168 |" in table
    assert "correct: tail elements unwritten" in table
    assert "| check_matmul_cuda_backends.json | (cut at the stage's cap: no verdict) |" in table
