"""Each guard check fires on the cheat it exists for, and stays quiet on an honest kernel."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from rung import knobs
from rung.judge.formats import load_problem
from rung.judge.rungs.guard import _stale
from rung.spec import Status
from tests.conftest import FIXTURES, rung_of

TINY = FIXTURES / "tiny"
SOL = TINY / "solutions"


def test_honest_kernel_passes_every_check(climb):
    guard = rung_of(climb(TINY, SOL / "good.py"), "guard")
    assert guard.status == Status.OK
    assert set(guard.metrics["checks"].values()) == {"ok"}
    assert "kernel_launched" not in guard.metrics["checks"]  # a torch solution launches no Triton kernel


@pytest.mark.parametrize(
    ("solution", "check", "says"),
    [
        ("subclass.py", "plain_tensor", "output is a Lazy, not a torch.Tensor"),
        ("stray_thread.py", "no_stray_threads", "4 thread(s) left running that were not there before"),
        ("patches_allclose.py", "functions_intact", "replaced: torch.allclose"),
        ("nondeterministic.py", "deterministic", "the same input twice gave different results"),
    ],
)
def test_cheat_is_named(climb, solution, check, says):
    guard = rung_of(climb(TINY, SOL / solution), "guard")
    assert guard.status == Status.FAILED
    assert guard.metrics["checks"][check] == "fired"
    assert f"{check}: {says}" in guard.message


def test_a_launch_over_an_empty_grid_is_not_a_kernel(climb):
    vector_add = FIXTURES.parent.parent / "problems" / "vector_add"
    guard = rung_of(climb(vector_add, FIXTURES / "empty_grid.py"), "guard")
    assert guard.status == Status.FAILED
    assert guard.metrics["checks"]["kernel_launched"] == "fired"


def test_a_kernel_that_launches_and_does_no_work_is_not_a_kernel(climb):
    vector_add = FIXTURES.parent.parent / "problems" / "vector_add"
    guard = rung_of(climb(vector_add, FIXTURES / "idle_kernel.py"), "guard")
    assert guard.status == Status.FAILED
    assert guard.metrics["checks"]["kernel_launched"] == "fired"
    assert "the output is right with every Triton launch skipped" in guard.message


def test_cached_output_is_caught_even_when_the_next_seed_draws_the_same_values(climb):
    """prefix_sum's first case is one int32 in -8..8: the next seed repeats it one time in 17,
    and a cached answer would then be right. The guard keeps drawing until the answer changes."""
    prefix_sum = FIXTURES.parent.parent / "problems" / "prefix_sum"
    problem = load_problem(prefix_sum)
    seed = next(
        s
        for s in range(1, 10_000)
        if torch.equal(*(problem.inputs({"n": 1}, s + k, "cpu")[0] for k in (0, 1)))
    )
    with knobs.scoped(RUNG_SEED=seed):
        run = climb(prefix_sum, prefix_sum / "solutions" / "wrong" / "output_cached.py")
    guard = rung_of(run, "guard")
    assert guard.status == Status.FAILED
    assert "output cached" in guard.message and "a cache keyed by the inputs' addresses" in guard.message


def test_an_output_that_ignores_its_input_is_named_so_not_a_cache(climb):
    """The same answer for new values in new tensors too: nothing is keyed by address."""
    guard = rung_of(climb(TINY, SOL / "ignores_input.py"), "guard")
    assert guard.status == Status.FAILED
    assert guard.metrics["checks"]["not_cached"] == "fired"
    assert "not_cached: output does not depend on the input" in guard.message
    assert "output cached" not in guard.message


class _Session:
    """What `_stale` asks of a session: the problem's tolerance and a reference, counted."""

    def __init__(self) -> None:
        self.problem = SimpleNamespace(tolerance=None)
        self.precise_calls = 0

    def reference(self, inputs, precise):
        self.precise_calls += precise
        return inputs[0].double() * 2


def _called(out: torch.Tensor) -> SimpleNamespace:
    meta = SimpleNamespace(shape=list(out.shape), dtype="float32", device="cpu")
    return SimpleNamespace(report=SimpleNamespace(outputs=[meta], returned="tensor"), outs=[out])


def test_the_float64_reference_is_built_only_for_an_output_that_repeats_the_last():
    """KernelBench's 4D matmul has a 3 GiB float32 output: its float64 reference (6 GiB) beside
    the judge's other copies ran an 80 GB GPU out of memory. A new answer is no cache, and needs
    none; the one that repeats the previous answer bit for bit is checked against it, and fires."""
    old, fresh = torch.ones(8), (torch.full((8,), 3.0),)
    new_expected = fresh[0] * 2
    session = _Session()
    assert _stale(_called(new_expected.clone()), new_expected, fresh, [old], session) == ""
    assert session.precise_calls == 0
    said = _stale(_called(old.clone()), new_expected, fresh, [old], session)
    assert said == "new values written into the same input tensors gave the previous answer"
    assert session.precise_calls == 1


def test_a_triton_solution_that_launches_nothing_fails_at_guard_not_compile(climb):
    vector_add = FIXTURES.parent.parent / "problems" / "vector_add"
    run = climb(vector_add, FIXTURES / "triton_calls_torch.py")
    compiled = rung_of(run, "compile")
    assert compiled.status == Status.SKIPPED and "nothing built ahead of time" in compiled.message
    guard = rung_of(run, "guard")
    assert guard.status == Status.FAILED
    assert "kernel_launched: no triton kernel was launched during the call" in guard.message
