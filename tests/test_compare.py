"""The comparison: figures, NaN and Inf rules, poison detection, tolerance floors; both directions."""

from __future__ import annotations

import math

import pytest
import torch

from rung.common.poison import poison, poisoned_allocations, poisoned_mask
from rung.judge.compare import compare
from rung.judge.tolerance import Tolerance

FP32 = Tolerance.for_dtype("float32")


def test_equal_outputs_pass_with_exact_figures():
    ref = torch.arange(10, dtype=torch.float64)
    c = compare(ref.float(), ref, FP32)
    assert c.ok
    assert c.metrics["max_abs_err"] == 0.0 and c.metrics["mismatches"] == 0
    assert c.metrics["psnr_db"] == math.inf and c.metrics["cosine"] == pytest.approx(1.0)


def test_one_wrong_element_is_found_with_index_got_and_expected():
    ref = torch.zeros(4, 5, dtype=torch.float64)
    got = ref.clone().float()
    got[2, 3] = 0.5
    c = compare(got, ref, FP32)
    assert not c.ok
    assert c.metrics["mismatches"] == 1
    assert c.metrics["first_mismatches"] == [{"index": [2, 3], "got": 0.5, "expected": 0.0}]
    assert "1 of 20 elements outside atol=1e-05 rtol=1e-05; first at (2, 3): got 0.5 expected 0" in c.message


def test_error_just_inside_and_just_outside_the_bound():
    ref = torch.full((3,), 100.0, dtype=torch.float64)
    bound = FP32.atol + FP32.rtol * 100.0
    assert compare(ref + 0.9 * bound, ref, FP32).ok
    assert not compare(ref + 1.1 * bound, ref, FP32).ok


def test_nan_and_inf_match_only_themselves():
    ref = torch.tensor([math.nan, math.inf, -math.inf, 1.0], dtype=torch.float64)
    assert compare(ref.clone(), ref, FP32).ok
    for i, bad in enumerate([0.0, -math.inf, math.inf, math.nan]):
        got = ref.clone()
        got[i] = bad
        c = compare(got, ref, FP32)
        assert not c.ok and c.metrics["mismatches"] == 1, (i, bad)


def test_unwritten_elements_are_told_apart_from_computed_nans():
    with poisoned_allocations():
        got = torch.empty(6)
    assert bool(poisoned_mask(got).all())
    got[:4] = 1.0
    got[4] = math.nan  # a NaN the kernel computed: not poison
    c = compare(got, torch.ones(6, dtype=torch.float64), FP32)
    assert not c.ok and c.metrics["unwritten"] == 1 and c.metrics["mismatches"] == 2
    assert "1 never written" in c.message


@pytest.mark.parametrize(
    "dtype", [torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.int32, torch.int64]
)
def test_poison_is_detectable_for_every_patterned_dtype(dtype):
    t = poison(torch.zeros(7, dtype=dtype))
    assert bool(poisoned_mask(t).all())
    assert not bool(poisoned_mask(torch.zeros(7, dtype=dtype)).any())


def test_allocations_are_restored_after_the_block():
    with poisoned_allocations():
        pass
    assert not bool(poisoned_mask(torch.zeros(3)).any())
    assert torch.empty.__name__ == "empty"


def test_psnr_and_cosine_floors_fail_a_noisy_output():
    g = torch.Generator().manual_seed(0)
    ref = torch.randn(1000, generator=g, dtype=torch.float64)
    noisy = ref + 0.3 * torch.randn(1000, generator=g, dtype=torch.float64)
    loose = Tolerance(atol=10.0, rtol=0.0, min_psnr_db=30.0, min_cosine=0.99)
    c = compare(noisy, ref, loose)
    assert not c.ok
    assert "PSNR" in c.message and "cosine similarity" in c.message
    assert compare(ref, ref, loose).ok


def test_integer_outputs_must_match_exactly():
    tol = Tolerance.for_dtype("int32")
    ref = torch.arange(5, dtype=torch.int32)
    assert compare(ref.clone(), ref, tol).ok
    assert not compare(ref + 1, ref, tol).ok
