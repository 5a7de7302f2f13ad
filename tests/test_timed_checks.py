"""What the judge checks of a timing it did not watch, on figures alone: each check fires on the
answer it exists for (the GPU tests show the same with real cheats)."""

from __future__ import annotations

import pytest

from rung.common.cupti_trace import CALL
from rung.common.measure import HARNESS, left_running
from rung.judge.rungs.bench_checks import check_timed
from rung.judge.rungs.outcome import Failed

HONEST = {"mean_ms": 0.1, "samples": 100, "snapshots": [], "harm": {}}


KEY = bytes(16)


def _judge(**answer):
    return check_timed(None, {"n": 1}, [], (None, None), {**HONEST, **answer}, ([], KEY), held_s=1.0)


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        ({"harm": {"patched": ["torch.cuda.Event.elapsed_time"]}}, "timing functions replaced while timed"),
        ({"new_threads": 2}, "2 thread(s) left running after the timed calls"),
        (
            {"outside_launches": 3, "outside_names": ["add_kernel"]},
            "device work launched outside any timed call",
        ),
        ({"late_calls": 5}, "5 timed call(s) still had work running after they returned"),
        ({"mean_ms": 100.0, "samples": 100}, "its timer was forged"),
        ({}, "no timed call's output came back to be checked"),
    ],
)
def test_each_check_fires_on_its_answer(answer, says):
    with pytest.raises(Failed, match=says.replace("(", r"\(").replace(")", r"\)")):
        _judge(**answer)


def _range(name: str, ts: float, dur: float, tid: int = 1) -> dict:
    return {"cat": "user_annotation", "name": name, "ts": ts, "dur": dur, "pid": 1, "tid": tid}


def _launch(corr: int, ts: float, tid: int = 1) -> dict:
    return {
        "cat": "cuda_runtime",
        "name": "cudaLaunchKernel",
        "ts": ts,
        "dur": 1,
        "pid": 1,
        "tid": tid,
        "args": {"correlation": corr},
    }


def _kernel(corr: int, name: str, ts: float, dur: float) -> dict:
    return {"cat": "kernel", "name": name, "ts": ts, "dur": dur, "args": {"correlation": corr}}


def _call(t: float, kernel_end: float, corr: int) -> list[dict]:
    """A call at host time t whose kernel runs from t+10 to `kernel_end`, then the marker at t+30."""
    return [
        _range(CALL, t, 5),
        _launch(corr, t + 1),
        _kernel(corr, "add_kernel", t + 10, kernel_end - (t + 10)),
        _range(HARNESS, t + 6, 2),
        _launch(corr + 1, t + 7),
        _kernel(corr + 1, "spin", t + 30, 1),
    ]


def test_an_honest_trace_leaves_nothing_running():
    events = _call(0, 29, 1) + _call(100, 129, 3)
    assert left_running(events) == {"outside_launches": 0, "outside_names": [], "late_calls": 0}


def test_work_that_ends_after_the_marker_is_late():
    events = _call(0, 60, 1) + _call(100, 129, 3)  # the first call's kernel outlives its marker
    assert left_running(events)["late_calls"] == 1


def test_a_launch_from_another_thread_is_outside_every_call():
    events = [*_call(0, 29, 1), _launch(9, 3, tid=2), _kernel(9, "sneaky", 12, 5)]
    found = left_running(events)
    assert found["outside_launches"] == 1 and found["outside_names"] == ["sneaky"]


def test_a_thread_left_running_is_named_by_where_it_began():
    import threading

    from rung.solution.harness import running_threads

    stop = threading.Event()

    def lingering_worker() -> None:
        stop.wait(30)

    before = running_threads({threading.main_thread().ident or 0})
    t = threading.Thread(target=lingering_worker, name="left-behind", daemon=True)
    t.start()
    try:
        new = [
            said
            for ident, said in running_threads({threading.main_thread().ident or 0}).items()
            if ident not in before
        ]
        assert len(new) == 1 and new[0].startswith("left-behind (in test_timed_checks.py:")
        assert new[0].endswith(" lingering_worker)")
    finally:
        stop.set()
        t.join()


class _Session:
    """As much of a session as the timed calls' checks use: float64 references that know how
    many of them are alive when the next is made."""

    lenient = False

    def __init__(self) -> None:
        import weakref

        self.alive: weakref.WeakSet = weakref.WeakSet()
        self.alive_when_made: list[int] = []

    def reference(self, inputs, precise):
        import torch

        self.alive_when_made.append(len(self.alive))
        out = torch.zeros(4, dtype=torch.float64)
        self.alive.add(out)
        return out


def _shots(n: int) -> list[dict]:
    """The first n calls in n slots (so the judge's draw is theirs); call k took set k % 3."""
    return [{"slot": k, "call": k, "copied": True} for k in range(n)]


def _timed(session, shots, monkeypatch, wrong_set=-1):
    import torch

    from rung.judge.rungs import bench_checks

    seen = []

    def judge_outputs(session, inputs, called, expected, precise, figures, ours):
        assert ours == (inputs == 0)  # set 0's own reference is the one the judge holds
        seen.append(inputs)
        return inputs != wrong_set, "values differ", {}

    monkeypatch.setattr(bench_checks, "judge_outputs", judge_outputs)
    references = (torch.zeros(4), {0: session.reference(0, True)})  # as bench hands set 0's over
    n = len(shots)
    answer = {**HONEST, "snapshots": shots, "timed_calls": n, "samples": n}
    slots = [[torch.zeros(4)] for _ in range(n + 1)]  # the last one the CUPTI pass's, not run here
    checked = check_timed(session, {"n": 1}, [0, 1, 2], references, answer, (slots, KEY), 1.0)
    return checked, seen


def test_timed_outputs_are_checked_set_by_set_one_float64_reference_alive(monkeypatch):
    session = _Session()
    checked, seen = _timed(session, _shots(5), monkeypatch)
    assert checked == 5 and seen == [0, 0, 1, 1, 2]
    # set 0's reference came in with the call; sets 1 and 2 were made with none other alive
    assert session.alive_when_made == [0, 0, 0]


def test_a_wrong_answer_in_a_later_set_still_fails(monkeypatch):
    with pytest.raises(Failed, match=r"timed call 1 \(input set 1\) gave a wrong answer while timed"):
        _timed(_Session(), _shots(3), monkeypatch, wrong_set=1)


def test_a_shot_under_an_unknown_slot_fails_before_any_reference_is_made(monkeypatch):
    session = _Session()
    with pytest.raises(Failed, match="unknown slot"):
        _timed(session, [*_shots(1), {"slot": 5, "call": 1, "copied": True}], monkeypatch)
    assert session.alive_when_made == [0]  # the caller's set 0 only


def test_a_cupti_pass_whose_calls_launched_nothing_still_counts_its_calls(monkeypatch, tmp_path):
    """A call that computes nothing while profiled (answers kept from earlier calls) makes every
    call of the CUPTI pass: they are counted, so its kept answers are checked as wrong ones,
    not taken for a steered choice of checked calls."""
    from rung.common import measure

    monkeypatch.setattr(measure, "timed", lambda *a, **k: {"samples": 30, "median_ms": 0.1, "raw_ms": []})
    monkeypatch.setattr(measure, "cupti", lambda *a, **k: {"error": "the calls launched no kernel"})
    figures = measure.measure(lambda i: None, None, lambda: None, tmp_path / "t.json")
    assert (figures["cupti_calls"], figures["cupti_error"]) == (
        30,  # as many as the events pass took, within 20 to 100
        "the calls launched no kernel",
    )

    def raises(*a, **k):
        raise RuntimeError("the solution raised at call 40")

    monkeypatch.setattr(measure, "cupti", raises)
    assert measure.measure(lambda i: None, None, lambda: None, tmp_path / "t.json")["cupti_calls"] == 0


def test_a_call_raising_part_way_through_the_cupti_pass_is_an_error_saying_so():
    from rung.judge.rungs.bench_checks import TimedCallRaised

    stopped = {"cupti_error": "RuntimeError: boom", "timed_calls": 130, "cupti_calls": 0}
    with pytest.raises(
        TimedCallRaised, match=r"while timed under the profiler \(the CUPTI pass\): RuntimeError: boom"
    ):
        _judge(**stopped, snapshots=[{"slot": 0, "call": 0}])
    # the profiler failing before any call: the counts agree, and the events pass's checks go on
    with pytest.raises(Failed, match="unknown slot"):
        _judge(**{**stopped, "timed_calls": 100}, snapshots=[{"slot": 0, "call": 0}])
