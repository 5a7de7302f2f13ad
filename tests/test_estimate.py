"""estimate: a cost model from the reference where a problem gives none, checked by hand counts."""

from __future__ import annotations

import torch

from rung.judge.estimate import estimated_cost
from rung.judge.formats import load_problem
from tests.conftest import FIXTURES


def test_kernelbench_linear_flops_are_2mnk_and_bytes_its_input_weights_and_output():
    problem = load_problem(FIXTURES / "kernelbench" / "matmul.py")  # Linear(64, 48) on a (32, 64) batch
    inputs = problem.inputs({}, 0, "cpu")
    cost = estimated_cost(problem.reference, inputs, problem.output_leaves, problem.weight_bytes())
    m, k, n = 32, 64, 48
    assert cost["flops"] == 2 * m * n * k  # the bias add is elementwise: not counted
    assert cost["bytes"] == 4 * (m * k + (k * n + n) + m * n)
    assert cost["cost_estimated"] is True
    assert cost["flops_by_op"] == {"addmm": 2 * m * n * k}


def test_a_kernelbench_case_is_estimated_on_the_meta_device_without_data():
    problem = load_problem(FIXTURES / "kernelbench" / "relu_large.py")  # 6 GiB of input on a real device
    inputs = problem.inputs({}, 0, "meta")
    cost = estimated_cost(problem.reference, inputs, problem.output_leaves, problem.weight_bytes())
    n = inputs[0].numel()
    assert cost["flops"] == 0 and cost["bytes"] == 2 * 4 * n  # ReLU: read once, written once


def test_a_destination_passing_buffer_counts_once_as_the_output():
    problem = load_problem(FIXTURES / "gpumode" / "matmul_out")  # a, b, and a `c` the reference ignores
    (data,) = inputs = problem.inputs({"m": 16, "n": 24, "k": 32, "seed": 1}, 1, "cpu")
    assert problem.output_leaves == {2}
    cost = estimated_cost(problem.reference, inputs, problem.output_leaves)
    assert cost["flops"] == 2 * 16 * 24 * 32
    assert cost["bytes"] == 4 * (16 * 32 + 32 * 24 + 16 * 24)
    assert bool(torch.isnan(data[2]).all())  # the judge's buffer still holds the poison: a copy ran
