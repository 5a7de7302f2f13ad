"""tf32: a correctness failure the size of TF32's rounding is named as that, and nothing else is."""

from __future__ import annotations

import pytest
import torch

from rung.judge.tf32 import RATIO, message, to_tf32
from rung.spec import Status
from tests.conftest import FIXTURES, rung_of

CONV = FIXTURES / "tf32_conv"
KERNELBENCH = FIXTURES / "kernelbench"


def test_rounding_keeps_ten_mantissa_bits_to_nearest_even():
    ulp = 2.0**-10
    x = torch.tensor([1 + ulp / 2, 1 + 3 * ulp / 2, 1 + ulp, -(1 + ulp / 2 + 2**-20)], dtype=torch.float32)
    assert to_tf32(x).tolist() == [1.0, 1 + 2 * ulp, 1 + ulp, -(1 + ulp)]


def test_truncation_drops_the_low_thirteen_bits_toward_zero():
    ulp = 2.0**-10
    x = torch.tensor([1 + ulp / 2, 1 + 3 * ulp / 2, -(1 + ulp - 2**-20)], dtype=torch.float32)
    assert to_tf32(x, truncate=True).tolist() == [1.0, 1 + ulp, -1.0]


def test_rounding_keeps_what_is_not_finite():
    x = torch.tensor([float("nan"), float("inf"), -float("inf")])
    for truncate in (False, True):
        assert torch.equal(torch.isnan(to_tf32(x, truncate)), torch.isnan(x))
        assert to_tf32(x, truncate)[1:].tolist() == [float("inf"), -float("inf")]


def test_an_error_of_tf32s_size_is_named_with_the_operations():
    said = message(["convolution"], 7.6e-4, (2.0e-4, 7.3e-4))
    assert said.startswith("the reference ran without TF32; the solution's convolution likely ran in TF32")
    assert "7.6e-04" in said and "(2.0e-04 to nearest, 7.3e-04 truncated)" in said


@pytest.mark.parametrize(
    ("ops", "solution_err", "tf32_errs"),
    [
        (["matmul"], 1e-2, (2.0e-4, 7.3e-4)),  # far larger than TF32's either way: a wrong kernel
        (["matmul"], 2.0e-4 / (2 * RATIO), (2.0e-4, 7.3e-4)),  # far smaller: not TF32's doing
        ([], 2.9e-4, (2.9e-4, 2.9e-4)),  # no matmul or convolution in the reference: nothing runs in TF32
        (["matmul"], 1e-3, (0.0, 0.0)),  # cutting to TF32 changes nothing (integer-valued inputs)
    ],
)
def test_anything_else_is_not_named_tf32(ops, solution_err, tf32_errs):
    assert message(ops, solution_err, tf32_errs) == ""


def test_a_convolution_on_tf32_operands_fails_naming_tf32(climb):
    run = climb(CONV, CONV / "solutions" / "tf32_operands.py")
    correct = rung_of(run, "correct")
    assert correct.status == Status.FAILED
    assert "the solution's convolution likely ran in TF32" in correct.message


def test_a_warning_of_tf32s_size_is_named_where_the_problems_own_check_passes(climb):
    run = climb(KERNELBENCH / "conv2d_small.py", KERNELBENCH / "solutions" / "conv2d_tf32_operands.py")
    assert run.verdict == "PASS"
    (warning,) = rung_of(run, "correct").metrics["warnings"]
    assert "rung's own policy would not:" in warning
    assert "the solution's convolution likely ran in TF32" in warning


def test_a_convolution_wrong_by_a_percent_fails_without_naming_tf32(climb):
    run = climb(CONV, CONV / "solutions" / "scaled.py")
    correct = rung_of(run, "correct")
    assert correct.status == Status.FAILED
    assert "norm-wise relative error 1.0e-02" in correct.message and "TF32" not in correct.message


def test_an_emulation_out_of_gpu_memory_names_nothing_and_raises_nothing():
    from types import SimpleNamespace

    from rung.judge.tf32 import explain

    def reference(inputs, precise):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 12.00 GiB")

    x = torch.randn(4, 4)
    assert explain(SimpleNamespace(reference=reference), (x,), [x], x.double()) == ""
