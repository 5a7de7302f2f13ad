"""What the judge observes itself, not what the solution process reports: planted solutions that
rewrite or forge the report each fail for their own reason; honest oddities still pass."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from rung import runner
from rung.judge.observed import ALIASED, MUTATED, Threads, input_changes
from rung.judge.rungs.stores import one_value
from rung.spec import Status
from tests.conftest import FIXTURES, rung_of, workspace_files, written_outside_its_run

TINY = FIXTURES / "tiny"
JUDGED = FIXTURES / "judged"
GUARDED = ("load", "run", "guard")
CHECKED = ("load", "run", "correct")


def _climb(climb, solution: str, only: tuple[str, ...]):
    """A climb of the tiny problem through `only` these rungs (the rest SKIPPED, saying so)."""
    if TINY not in climb.described:
        climb.described[TINY] = runner.describe(TINY, climb.store.root / "scratch")
    problem, device = climb.described[TINY]
    return runner.climb(climb.store, problem, device, JUDGED / solution, only=only)


@pytest.mark.parametrize(
    ("solution", "only", "rung", "says"),
    [
        (
            "wraps_channel.py",
            GUARDED,
            "guard",
            ["no_alias: output 0 shares memory with input 0", "no_stray_threads: 1 thread(s) left running"],
        ),
        (
            "forged_launches.py",
            GUARDED,
            "guard",
            ["did not change when every value the Triton kernels stored"],
        ),
        ("gate_kernel.py", GUARDED, "guard", ["were all scaled by one factor: one stored value (a gate)"]),
        ("thread_at_import.py", GUARDED, "guard", ["no_stray_threads: 1 thread(s) left running"]),
        ("two_buffers.py", GUARDED, "guard", ["fresh_output: the second call", "an earlier call returned"]),
        (
            "subclass_named_tensor.py",
            GUARDED,
            "guard",
            ["output is a Tensor (a subclass so named), not a torch"],
        ),
        (
            "alias_later_case.py",
            CHECKED,
            "correct",
            ["{'n': 300} (seed", "output 0 shares memory with input 0"],
        ),
        (
            "mutates_later_case.py",
            CHECKED,
            "correct",
            ["{'n': 300} (seed", "input 0 was modified in place (1 elements changed, first at (7,))"],
        ),
    ],
)
def test_a_forged_or_hidden_fact_fails_for_its_reason(climb, solution, only, rung, says):
    before = workspace_files(climb)
    run = _climb(climb, solution, only)
    r = rung_of(run, rung)
    assert r.status == Status.FAILED, [(x.name, x.status, x.message) for x in run.rungs]
    for said in says:
        assert said in r.message
    assert not run.ok
    assert not written_outside_its_run(climb, before, run)
    assert climb.store.run(run.id).ok is False  # the store still reads, with this run in it


def test_a_dead_import_skips_nothing_on_a_cpu(climb):
    """An import that never runs names CuTe in the source, not in what the import used: the rungs
    that call the solution run on a CPU, and fail its wrong answer."""
    run = _climb(climb, "dead_import.py", CHECKED)
    load = rung_of(run, "load")
    assert load.metrics["backends_in_source"] == ["cute"]
    assert load.metrics["backends"] == ["torch"]
    assert rung_of(run, "run").status == Status.OK
    correct = rung_of(run, "correct")
    assert correct.status == Status.FAILED and "elements outside" in correct.message


def test_honest_split_k_passes_the_stores_test(climb):
    """Triton partials summed by torch: the answer changes element by element."""
    guard = rung_of(_climb(climb, "split_k.py", GUARDED), "guard")
    assert guard.status == Status.OK, guard.message
    assert guard.metrics["checks"]["kernel_launched"] == "ok"


@pytest.mark.parametrize(
    ("after", "says"),
    [
        (lambda o: torch.full_like(o, float("nan")), "all took one value"),
        (lambda o: o + 0.5, "all moved by one amount"),
        (lambda o: o * 3.0, "were all scaled by one factor"),
        (lambda o: o.clone(), "did not change"),
    ],
)
def test_what_one_value_can_do_is_told_from_the_kernels_work(after, says):
    before = torch.randn(64)
    assert says in one_value([before], [after(before)])
    honest = (before + 1) * (1.5 + torch.rand(64)) - 1
    assert one_value([before], [honest]) == ""


def test_input_read_back_names_mutation_and_alias():
    placed = (torch.arange(6.0),)
    assert input_changes(placed, [placed[0].clone()], [placed[0] * 2], set()) == []
    doubled = placed[0] * 2
    (_, mutated), (kind, said) = input_changes(placed, [doubled], [doubled], set())
    assert mutated == "input 0 was modified in place (5 elements changed, first at (1,))"
    assert (kind, said) == (ALIASED, "output 0 shares memory with input 0 (input 0 now holds its values)")
    poked = placed[0].clone()
    poked[4] = -1
    ((kind, said),) = input_changes(placed, [poked], [doubled], set())
    assert kind == MUTATED and said.endswith("first at (4,))")
    assert input_changes(placed, [poked], [doubled], {0}) == []  # the format's output buffer


def test_threads_are_counted_from_proc_not_reported():
    """A child that starts a thread after its count was taken: the judge sees it by tid."""
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys,threading,time; sys.stdin.readline();"
            "threading.Thread(target=time.sleep, args=(60,), daemon=True).start(); print(1, flush=True); time.sleep(60)",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        threads = Threads()
        threads.note(child.pid)
        assert threads.stray(child.pid) == ([], "")
        assert child.stdin is not None and child.stdout is not None
        child.stdin.write("\n")
        child.stdin.flush()
        child.stdout.readline()
        stray, why = threads.stray(child.pid)
        assert len(stray) == 1 and why == ""
        assert threads.stray(child.pid, named_are_libraries=True)[0] == stray  # it keeps its starter's name
    finally:
        child.kill()
        child.wait()
