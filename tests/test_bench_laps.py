"""bench/bench_laps.py's table of where each benchmark case's time went."""

from __future__ import annotations

import sys

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))

import bench_laps


def _check(bench: dict) -> dict:
    rungs = [{"name": "load", "seconds": 1.5}, {"name": "bench", "seconds": 6.5, "metrics": bench}]
    return {"solutions": [{"rungs": rungs}]}


CASE = {
    "case": {"size": 512},
    "input_sets": 8,
    "median_ms": 0.051,
    "wall_s": {
        "check": 0.01,
        "solution": 5.23,
        "timed_checks": 0.01,
        "reference": 0.79,
        "in_solution_process": {"events": 5.13, "cupti": 0.08},
    },
}


def test_a_case_reads_as_its_laps_and_their_sum():
    lines = bench_laps.rows(_check({"cases": [CASE]}))
    assert lines[0] == "rungs (s): load 1.50, bench 6.50"
    row = lines[-2]
    assert row.startswith('| {"size": 512} | 8 | 51.0 | 0.01 | 5.23 | 0.01 | 0.79 | 0.00 | 5.13 | 0.08 |')
    assert row.endswith("| 6.04 |")


def test_a_bench_cut_short_reads_from_what_it_kept():
    lines = bench_laps.rows(_check({"measured_before": [CASE]}))
    assert any(line.startswith('| {"size": 512} |') for line in lines)


def test_a_check_without_bench_cases_says_so():
    assert "no bench cases" in bench_laps.rows(_check({}))
