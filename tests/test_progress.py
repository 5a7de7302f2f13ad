"""rung check's live line (a terminal only) and its summary line."""

from __future__ import annotations

import io
import time
from pathlib import Path

import pytest
from rich.console import Console

from rung import knobs, ladder, progress, render
from rung.spec import Device, Run, RungResult, Solution, Status


def _run(*statuses: tuple[str, Status], finished: bool = True) -> Run:
    run = Run(1, "p", Solution("s.py", "0" * 64, "torch"), Device("cpu", "cpu"), 1, started=time.time() - 2)
    run.rungs = [RungResult(name, status, "") for name, status in statuses]
    run.finished = time.time() if finished else None
    return run


def test_each_run_is_counted_as_pytest_would():
    checked = (("run", Status.OK), ("guard", Status.OK), ("correct", Status.OK), ("scale", Status.OK))
    passed = _run(*checked, ("bench", Status.SKIPPED))
    failed = _run(("run", Status.OK), ("correct", Status.FAILED))
    crashed = _run(("run", Status.ERROR))
    hung = _run(("run", Status.OK), ("correct", Status.TIMEOUT))
    unchecked = _run(("run", Status.SKIPPED), ("correct", Status.SKIPPED))  # a CUDA kernel, no GPU
    unfinished = _run(("run", Status.OK), finished=False)
    words = [progress.outcome(r) for r in (passed, failed, crashed, hung, unchecked, unfinished)]
    assert words == ["passed", "failed", "errors", "errors", "skipped", "errors"]
    assert progress.summary([passed, failed, crashed, unchecked], 3.25) == {
        "passed": 1,
        "failed": 1,
        "errors": 1,
        "skipped": 1,
        "xfailed": 0,
        "wall_s": 3.25,
    }
    assert progress.summary_line([passed, unchecked], 12.34).plain == (
        "== 1 passed, 0 failed, 0 errors, 1 skipped in 12.3s =="
    )


def test_the_live_line_names_solution_rung_case_and_counts_down_its_time_limit(tmp_path):
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=160)
    (tmp_path / "7").mkdir()
    cases = tmp_path / "7" / "progress.jsonl"
    cases.write_text(
        '{"rung": "correct", "done": 2, "total": 3, "case": {"n": 5}}\n{"rung": "correct", "done": 3, "tot'
    )  # the judge is still writing the last line
    with (
        knobs.scoped(RUNG_TIMEOUT_S=90),
        progress.Climbing(console, [Path("a.py"), Path("b.py")], tmp_path) as live,
    ):
        live.rung_done(7, "guard")
        assert live.bar.tasks[-1].description == "[1/2] a.py  correct"
        live.bar.refresh()
        assert "case 2/3 {'n': 5}" in screen.getvalue()
        live.rung_done(7, "correct")
        live.bar.refresh()
        assert "case 2/3" not in screen.getvalue().rsplit("a.py  scale", 1)[-1]  # a case of another rung
        live.rung_done(7, ladder.NAMES[-1])
        assert live.bar.tasks[-1].description == "[1/2] a.py  storing the run"
        live.run_done()
        assert live.bar.tasks[-1].description == "[2/2] b.py  load"
        live.bar.refresh()
    drawn = screen.getvalue()
    assert "[2/2] b.py  load" in drawn
    assert "times out in 1m30s" in drawn or "times out in 1m29s" in drawn


def test_piped_output_draws_nothing_live():
    screen = io.StringIO()
    console = Console(file=screen, width=120)  # not a terminal
    with progress.Climbing(console, [Path("a.py")], Path("/nonexistent")) as live:
        live.rung_done(1, "load")
        live.run_done()
    assert screen.getvalue() == ""
    assert progress.time_limit_s("correct") == 600  # the rung's own limit where RUNG_TIMEOUT_S is 0


def test_the_live_line_of_candidates_climbing_at_once_counts_them_and_names_each_rung():
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=160)
    a, b = _run(("load", Status.OK)), _run(("load", Status.OK), ("compile", Status.OK))
    a.id, b.id = 1, 2
    a.solution.path, b.solution = "x/a.py", Solution("x/b.py", "1" * 64)
    with progress.ClimbingAtOnce(console, [Path("x/a.py"), Path("x/b.py")]) as live:
        live.rung_done(a, "load")
        live.rung_done(b, "compile")
        assert live.bar.tasks[0].description == "[0/2 checked]  a.py: compile, b.py: run"
        live.run_done(a)
        assert live.bar.tasks[0].description == "[1/2 checked]  b.py: run"


def test_waiting_spins_on_a_terminal_and_says_it_once_elsewhere():
    screen = io.StringIO()
    with progress.waiting(Console(file=screen, force_terminal=True, width=100), "a judge reads p"):
        pass
    assert "a judge reads p" in screen.getvalue() and "0:00:00" in screen.getvalue()
    piped = io.StringIO()
    with progress.waiting(Console(file=piped, width=100), "a judge reads p"):
        pass
    assert piped.getvalue() == "a judge reads p\n"


def test_a_long_rung_line_wraps_at_words_under_its_message_on_a_terminal_and_never_when_piped():
    message = "3 kernel build(s) for sm_90: softmax_kernel (from {'rows': 1024}): 55 regs\nnext: " + "x" * 40
    r = RungResult("compile", Status.OK, message, {}, [], 3.71)
    terminal = Console(width=60, record=True, color_system=None, soft_wrap=False)
    render.print_rung_line(terminal, r)
    assert [line.rstrip() for line in terminal.export_text().splitlines()] == [
        "  ✓ compile  OK        3.71s  3 kernel build(s) for sm_90:",
        "                              softmax_kernel (from {'rows':",
        "                              1024}): 55 regs",
        "                              next:",
        "                              xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        "                              xxxxxxxxxx",
    ]
    piped = Console(width=60, record=True, color_system=None, soft_wrap=True)
    render.print_rung_line(piped, r)
    assert piped.export_text().splitlines() == [
        "  ✓ compile  OK        3.71s  " + message.splitlines()[0],
        " " * 31 + "next: " + "x" * 40,
    ]


def _timed(started: float, took: list[tuple[str, float, float]], finished: float | None) -> Run:
    """A verified run that began at `started`: each rung (name, began_s, seconds)."""
    run = Run(1, "p", Solution("s.py", "0" * 64, "torch"), Device("cuda", "H100"), 1, started=started)
    run.rungs = [RungResult(n, Status.OK, began_s=b, seconds=s) for n, b, s in took]
    run.finished = finished
    return run


CLIMB = [("load", 0.5, 0.3), ("run", 0.8, 0.2), ("guard", 1.0, 1.0), ("correct", 2.0, 1.0)]
CLIMB += [("scale", 3.0, 1.5), ("profile", 4.6, 2.0)]


def test_the_summary_says_where_the_time_of_a_check_went_and_its_parts_add_up():
    first, second = _timed(100.0, CLIMB, 107.0), _timed(107.5, CLIMB, 114.0)
    split = progress.summary([first, second], 16.0)["time_to_verdict"]
    assert split == {
        "wall_s": 16.0,
        "outside_runs_s": 2.5,  # the problem described before the first run, the gap between them
        "start_s": 1.0,
        "rungs_s": 8.0,
        "profile_s": 4.0,
        "other_s": 0.5,  # 0.5 s after the first run's last rung, none after the second's
    }
    assert sum(v for k, v in split.items() if k != "wall_s") == pytest.approx(16.0)
    assert progress.summary_line([first, second], 16.0).plain == (
        "== 2 passed, 0 failed, 0 errors, 0 skipped in 16.0s:"
        " outside runs 2.5, start 1.0, rungs 8.0, profile 4.0, other 0.5 =="
    )
    assert render.verdict(first).plain.splitlines()[0] == (
        "  verdict: PASS  (6 ok; 7.0s: start 0.5, rungs 4.0, profile 2.0, other 0.5)"
    )


def test_runs_that_climbed_at_once_keep_only_the_checks_wall_and_each_its_own_split():
    first, second = _timed(100.0, CLIMB, 107.0), _timed(101.0, CLIMB, 107.6)  # on two workers
    said = progress.summary([first, second], 9.0)
    assert "time_to_verdict" not in said and said["wall_s"] == 9.0
    assert progress.summary_line([first, second], 9.0).plain.endswith(" in 9.0s ==")
    assert second.time_to_verdict.to_dict() == {
        "wall_s": 6.6,
        "start_s": 0.5,
        "rungs_s": 4.0,
        "profile_s": 2.0,
        "other_s": 0.1,
    }


def test_an_unfinished_run_says_what_it_can():
    unfinished = _timed(100.0, CLIMB[:3], None)
    assert render.verdict(unfinished).plain.splitlines()[0] == (
        "  verdict: UNFINISHED after guard  (3 ok; unfinished: start 0.5, rungs 1.5, profile 0.0)"
    )
    assert "time_to_verdict" not in progress.summary([unfinished], 3.0)
