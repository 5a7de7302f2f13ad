"""The data model round-trips through JSON and refuses other schemas."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from rung.spec import NO_BENCHMARKS, SCHEMA, Device, Run, RungResult, Solution, Status, dumps


def sample_run() -> Run:
    return Run(
        id=7,
        problem="vector_add",
        solution=Solution("a.py", "ab" * 32, "triton"),
        device=Device("cpu", "test cpu"),
        seed=42,
        rungs=[
            RungResult("load", Status.OK, "fine", {"backend": "triton"}),
            RungResult("correct", Status.FAILED, "bad", {"psnr_db": math.inf, "x": [1, 2]}, ["a.ptx"], 1.5),
        ],
        started=1.0,
        finished=3.0,
    )


def test_run_round_trips():
    run = sample_run()
    again = Run.from_dict(json.loads(json.dumps(run.to_dict())))
    assert again == run
    assert again.verdict == "FAIL at correct" and not again.ok


def test_a_rung_is_found_by_name_and_one_that_did_not_run_is_none():
    run = sample_run()
    assert run.rung("correct") is run.rungs[1]
    assert run.rung("bench") is None


def test_dumps_is_strict_json():
    text = dumps(sample_run())
    assert "Infinity" not in text and "NaN" not in text
    metrics = json.loads(text)["rungs"][1]["metrics"]
    assert metrics["psnr_db"] is None and metrics["null_reasons"] == {"psnr_db": "infinite"}
    assert json.loads(dumps({"a": [1.0, float("nan")], "b": float("-inf")})) == {
        "a": [1.0, None],
        "b": None,
        "null_reasons": {"b": "negative infinite"},
    }
    assert json.loads(text)["schema"] == SCHEMA


def test_other_schema_is_refused():
    d = sample_run().to_dict()
    d["schema"] = "rung/0"
    with pytest.raises(ValueError, match="schema"):
        Run.from_dict(d)


def _climbed(statuses: dict[str, Status], finished: float | None = 1.0, **messages: str) -> Run:
    names = ("load", "compile", "run", "guard", "correct", "scale", "bench", "dump")
    rungs = [RungResult(n, statuses.get(n, Status.OK), messages.get(n, f"{n} says why")) for n in names]
    return Run(1, "p", Solution("s.py", "0"), Device("cpu", "cpu"), 0, rungs, finished=finished)


@pytest.mark.parametrize(
    ("statuses", "outcome", "verdict"),
    [
        ({"bench": Status.SKIPPED}, "verified", "PASS"),  # no GPU: not timed, but checked
        ({"compile": Status.SKIPPED, "dump": Status.SKIPPED}, "verified", "PASS"),
        # a CUDA C++ kernel on a machine with no GPU: built, never compared with the reference
        (
            {n: Status.SKIPPED for n in ("run", "guard", "correct", "scale", "bench")},
            "unverified",
            "SKIPPED at run",
        ),
        ({"correct": Status.SKIPPED, "scale": Status.SKIPPED}, "unverified", "SKIPPED at correct"),
        ({"guard": Status.SKIPPED}, "unverified", "SKIPPED at guard"),  # RUNG_SKIP=guard
        # a language whose extra is not installed: nothing ran, and load says why
        (
            {
                n: Status.SKIPPED
                for n in ("load", "compile", "run", "guard", "correct", "scale", "bench", "dump")
            },
            "unverified",
            "SKIPPED at load",
        ),
        ({"scale": Status.SKIPPED}, "unverified", "SKIPPED at scale"),  # RUNG_SKIP=scale
        ({"correct": Status.FAILED}, "failed", "FAIL at correct"),
        ({"run": Status.SKIPPED, "compile": Status.ERROR}, "failed", "FAIL at compile"),
        ({"guard": Status.TIMEOUT}, "failed", "FAIL at guard"),
        ({"bench": Status.INTERRUPTED}, "unverified", "INTERRUPTED after dump"),
    ],
)
def test_ok_means_verified(statuses, outcome, verdict):
    """ok is true only where every rung that decides correctness ran and passed."""
    run = _climbed(statuses)
    assert (run.outcome.value, run.verdict, run.ok) == (outcome, verdict, outcome == "verified")
    assert run.to_dict()["ok"] is run.ok and run.to_dict()["outcome"] == outcome
    assert bool(run.why) == (outcome != "verified")


def test_an_unfinished_or_empty_run_is_not_verified():
    assert (
        not _climbed({}, finished=None).ok and _climbed({}, finished=None).verdict == "UNFINISHED after dump"
    )
    empty = Run(1, "p", Solution("s.py", "0"), Device("cpu", "cpu"), 0, [], finished=1.0)
    assert empty.outcome.value == "unverified" and empty.verdict == "EMPTY"


def test_scale_is_excused_only_for_sizes_this_machine_cannot_hold():
    """scale SKIPPED with nothing to check, or with every size that fits matched and the rest
    named as too large, leaves a version verified; any other scale SKIPPED does not."""
    no_benchmarks = _climbed({"scale": Status.SKIPPED}, scale=NO_BENCHMARKS)
    assert no_benchmarks.ok and no_benchmarks.verdict == "PASS"
    too_large = _climbed({"scale": Status.SKIPPED})
    too_large.rungs[5].metrics["not_checked"] = ["{'n': 16777216}: 128 MiB > RUNG_CPU_MAX_CASE_MB=64"]
    assert too_large.ok
    told = _climbed({"scale": Status.SKIPPED}, scale=f"{NO_BENCHMARKS} (says the solution)")
    assert not told.ok and told.why == f"{NO_BENCHMARKS} (says the solution)"


def test_the_judge_says_no_benchmarks_in_the_words_spec_reads():
    """spec excuses scale by the judge's exact message: the two must not drift apart."""
    judge = Path(__file__).parents[1] / "src" / "rung" / "judge" / "rungs" / "correct.py"
    source = judge.read_text()
    assert f'"{NO_BENCHMARKS}"' in source and '"not_checked"' in source


def _timed_run(finished: float | None) -> Run:
    """A run that began at t=100: its judge started for 3.1 s, then load, correct, bench and
    profile ran with gaps between them; a rung of a store before began_s was recorded has none."""
    run = Run(1, "p", Solution("s.py", "0" * 64), Device("cuda", "H100"), 1, started=100.0, finished=finished)
    for name, began_s, seconds in (("load", 3.1, 0.4), ("correct", 3.6, 2.0), ("bench", 5.7, 4.6)):
        run.rungs.append(RungResult(name, Status.OK, seconds=seconds, began_s=began_s))
    run.rungs.append(RungResult("profile", Status.OK, seconds=2.2, began_s=10.4))
    run.rungs.append(RungResult("memcheck", Status.SKIPPED, "when asked", began_s=12.6))
    return run


def test_time_to_verdict_splits_the_wall_into_parts_that_add_up_to_it():
    split = _timed_run(finished=112.9).time_to_verdict
    assert (split.wall_s, split.start_s, split.rungs_s, split.profile_s) == (12.9, 3.1, 7.0, 2.2)
    assert split.other_s == pytest.approx(0.6)
    assert split.start_s + split.rungs_s + split.profile_s + split.other_s == pytest.approx(split.wall_s)
    doc = json.loads(dumps(_timed_run(finished=112.9)))
    assert doc["time_to_verdict"] == {
        "wall_s": 12.9,
        "start_s": 3.1,
        "rungs_s": 7.0,
        "profile_s": 2.2,
        "other_s": pytest.approx(0.6),
    }
    assert doc["rungs"][0]["began_s"] == 3.1
    assert Run.from_dict(doc).rungs == _timed_run(finished=112.9).rungs  # began_s read back


def test_an_unfinished_run_or_one_with_no_start_recorded_says_what_it_can():
    unfinished = _timed_run(finished=None).time_to_verdict
    assert (unfinished.wall_s, unfinished.other_s) == (None, None)
    assert (unfinished.start_s, unfinished.rungs_s, unfinished.profile_s) == (3.1, 7.0, 2.2)
    stored_before = _timed_run(finished=112.9)
    stored_before.rungs[0].began_s = None
    said = stored_before.time_to_verdict
    assert (said.wall_s, said.start_s, said.other_s, said.rungs_s) == (12.9, None, None, 7.0)
    empty = Run(1, "p", Solution("s.py", "0" * 64), Device("cpu", "cpu"), 1, started=5.0, finished=5.5)
    assert empty.time_to_verdict.to_dict() == {
        "wall_s": 0.5,
        "start_s": None,
        "rungs_s": 0.0,
        "profile_s": 0.0,
        "other_s": None,
    }
