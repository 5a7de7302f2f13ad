"""bench/spread.py's reading of five runs, and its held-out matvec problem on the CPU (its GPU
runs are the benchmark, recorded in docs/BENCHMARKS.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))

import spread

MATVEC = ROOT / "bench" / "spread" / "matvec"


def _run(style: str, medians: list[float], gap: float | list[float] = 0.5) -> list[dict]:
    gaps = gap if isinstance(gap, list) else [gap] * len(medians)
    return [
        {
            "style": style,
            "verdict": "PASS",
            "cases": [
                {
                    "case": '{"n": 1}',
                    "median_us": m,
                    "kernels_per_call": 2,
                    "gap_us": g,
                    "graph_us": None,
                    "method": "CUPTI",
                }
            ],
        }
        for m, g in zip(medians, gaps, strict=True)
    ]


def test_a_steady_figure_meets_the_target_and_a_moving_one_does_not(tmp_path):
    steady = spread.Entry("steady", MATVEC, MATVEC / "solutions" / "split_k.py")
    steady.runs = _run("in turn", [30.0, 30.1, 30.2, 30.0, 30.3])
    moving = spread.Entry("moving", MATVEC, MATVEC / "solutions" / "torch_ops.py")
    moving.runs = _run("in turn", [30.0, 31.0, 30.2, 30.0, 30.3])
    [row] = spread.rows(steady)
    assert row["runs"] == 5 and abs(row["spread"] - 0.3 / 30.1) < 1e-9 and row["target"] == "2% over runs"
    spread.write(tmp_path, [steady, moving], 5)
    md = (tmp_path / "spread.md").read_text()
    assert (
        '| steady | in turn | `{"n": 1}` | 2 | 30.10 | 5 | 1.00% | 0.50 | 1.01% |  | 2% over runs: met |'
        in md
    )
    assert (
        "| moving | in turn |" in md
        and "| 30.20 | 5 | 3.31% | 0.50 | 3.37% |  | 2% over runs: NOT met |" in md
    )
    assert json.loads((tmp_path / "spread.json").read_text())[0]["rows"][0]["medians_us"][0] == 30.0


def test_a_span_that_moves_with_its_idle_gap_shows_a_steady_busy_time():
    # 2026-12-06-f's split-K matvec at m=64: one run's gap between its kernels 3.0 us, the others' 1.1
    entry = spread.Entry("gapped", MATVEC, MATVEC / "solutions" / "split_k.py")
    entry.runs = _run("in turn", [39.3, 39.3, 41.0, 39.3, 39.4], gap=[1.1, 1.1, 3.0, 1.3, 1.2])
    [row] = spread.rows(entry)
    assert row["spread"] > 0.04 and row["busy_spread"] < 0.006
    entry.runs[0]["cases"][0]["gap_us"] = None  # a run without CUPTI's figures: no busy time to compare
    assert spread.rows(entry)[0]["busy_spread"] is None


def test_each_runs_log_line_keeps_its_figures():
    run = _run("in turn", [40.04])[0]
    run["cases"][0]["per_set_us"] = [39.31, 46.98, 40.0]
    assert spread.said(run) == 'PASS; {"n": 1} 40.0 us (sets 39.3-47.0)'
    failed = {"verdict": "FAIL", "reason": "bench: a thread left running", "cases": []}
    assert spread.said(failed) == "FAIL; bench: a thread left running"
    assert spread.said({"error": "no output"}) == "no output"


def test_a_small_kernel_must_also_agree_between_the_two_styles():
    entry = spread.Entry("small", MATVEC, MATVEC / "solutions" / "split_k.py", tuple(spread.STYLES))
    entry.runs = _run("in turn", [5.0] * 5) + _run("same inputs", [5.3] * 5)
    assert abs(spread.between_styles(spread.rows(entry))['{"n": 1}'] - 0.06) < 1e-9
    md = spread.markdown([entry], 5)
    assert "| 6.00% | 2% over runs and styles: NOT met |" in md  # steady within a style, apart between them
    entry.runs = _run("in turn", [5.0] * 5) + _run("same inputs", [5.05] * 5)
    assert "| 1.00% | 2% over runs and styles: met |" in spread.markdown([entry], 5)


def test_the_matvec_solutions_climb_on_the_cpu_with_the_interpreter_left_in_the_shell():
    # TRITON_INTERPRET=1 in the user's environment must not reach the process that builds:
    # Triton would hand its compiler interpreted functions and the compile rung would fail.
    env = {**os.environ, "TRITON_INTERPRET": "1", "RUNG_TRIALS": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "rung", "check", str(MATVEC), "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    doc = json.loads(done.stdout)
    verdicts = {Path(s["path"]).name: s for s in doc["solutions"]}
    split_k = {r["name"]: r for r in verdicts["split_k.py"]["rungs"]}
    assert split_k["compile"]["status"] == "OK", split_k["compile"]["message"]
    assert [k["name"] for k in split_k["compile"]["metrics"]["kernels"]] == [
        "partial_kernel",
        "reduce_kernel",
    ]
    assert split_k["correct"]["status"] == "OK" and verdicts["torch_ops.py"]["verdict"] == "PASS"
