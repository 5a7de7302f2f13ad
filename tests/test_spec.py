"""The data model round-trips through JSON and refuses other schemas."""

from __future__ import annotations

import json
import math

import pytest

from rung.spec import SCHEMA, Device, Run, RungResult, Solution, Status, dumps


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


def test_skipped_rungs_do_not_fail_a_run():
    run = sample_run()
    run.rungs = [RungResult("load", Status.OK), RungResult("bench", Status.SKIPPED, "no GPU")]
    assert run.ok and run.verdict == "PASS"
