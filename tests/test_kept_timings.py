"""Reference and baseline timings kept across checks: reused only under the same key, never
from a folder a solution process may write, never when the knob says no."""

from __future__ import annotations

import types
from pathlib import Path

import pytest
import torch

from rung import knobs
from rung.judge import kept_timings


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(
        torch.cuda, "get_device_properties", lambda i: types.SimpleNamespace(name="Fake GPU", uuid="GPU-1")
    )
    folder = tmp_path / "cache"
    with knobs.scoped(RUNG_CACHE_DIR=str(folder), RUNG_KEEP_TIMINGS=1):
        yield folder


@pytest.fixture
def problem(tmp_path: Path) -> Path:
    folder = tmp_path / "problems" / "p"
    folder.mkdir(parents=True)
    (folder / "problem.py").write_text("def reference(x):\n    return x\n")
    return folder


def _key(problem: Path, **changes: object) -> str:
    args: dict[str, object] = {
        "what": "reference",
        "problem_path": problem,
        "case": {"n": 4},
        "input_sets": 8,
        "settings": {"policy": {"warmup_s": 0.03}, "flush_bytes": 1},
    }
    args.update(changes)
    return kept_timings.key(**args)  # type: ignore[arg-type]


def test_a_figure_is_measured_once_then_reused_with_where_it_came_from(cache, problem, tmp_path):
    calls = []

    def measure() -> dict[str, object]:
        calls.append(1)
        return {"median_ms": 2.0, "sem_ms": 0.01, "raw_ms": [2.0] * 50}

    k = _key(problem)
    first = kept_timings.timing(k, tmp_path / "run1", measure)
    again = kept_timings.timing(k, tmp_path / "run2", measure)
    assert len(calls) == 1
    assert "kept" not in first and first["raw_ms"]
    assert again["median_ms"] == 2.0 and again["kept"]["run"] == str(tmp_path / "run1")
    assert "raw_ms" not in again


def test_an_error_is_not_kept(cache, problem, tmp_path):
    results = iter([{"error": "torch.compile failed"}, {"median_ms": 1.0}])
    k = _key(problem)
    assert "error" in kept_timings.timing(k, tmp_path, lambda: next(results))
    assert "kept" not in kept_timings.timing(k, tmp_path, lambda: next(results))


@pytest.mark.parametrize(
    "change",
    [
        {"what": "compile"},
        {"case": {"n": 5}},
        {"input_sets": 4},
        {"settings": {"policy": {"warmup_s": 0.1}, "flush_bytes": 1}},
    ],
)
def test_anything_that_decides_the_figure_changes_the_key(cache, problem, change):
    assert _key(problem) != _key(problem, **change)


def test_the_problems_files_and_the_gpu_are_in_the_key(cache, problem, monkeypatch):
    before = _key(problem)
    (problem / "problem.py").write_text("def reference(x):\n    return x.clone()\n")
    edited = _key(problem)
    (problem.parent / "utils.py").write_text("SHARED = 1\n")  # GPU MODE's helpers one level up
    helpers = _key(problem)
    monkeypatch.setattr(
        torch.cuda, "get_device_properties", lambda i: types.SimpleNamespace(name="Fake GPU", uuid="GPU-2")
    )
    assert len({before, edited, helpers, _key(problem)}) == 4


def test_a_cache_the_solution_process_may_write_is_not_used(cache, tmp_path):
    assert kept_timings.usable([str(tmp_path / "scratch")])
    assert not kept_timings.usable([str(cache.parent)])  # the timings file lies inside it
    with knobs.scoped(RUNG_KEEP_TIMINGS=0):
        assert not kept_timings.usable([])


def test_the_table_stays_bounded(cache, problem, tmp_path, monkeypatch):
    monkeypatch.setattr(kept_timings, "MAX_ENTRIES", 3)
    for n in range(5):
        kept_timings.timing(_key(problem, case={"n": n}), tmp_path, lambda: {"median_ms": 1.0})
    assert len(kept_timings._read()) == 3
