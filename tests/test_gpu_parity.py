"""On a CUDA device: the launch floor, TF32 named as the cause of a failure, estimated rooflines,
and GPU MODE's output buffers and dtypes judged as GPU MODE judges them (issue 15).

Marked `gpu`; skipped, saying so, where no CUDA device is present (CI has none).
"""

from __future__ import annotations

import pytest
import torch

from rung.common.timing import Flusher, Policy
from rung.spec import Status
from tests.conftest import FIXTURES, rung_of

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine"),
]
GPUMODE = FIXTURES / "gpumode"
KERNELBENCH = FIXTURES / "kernelbench"
CONV = FIXTURES / "tf32_conv"


def test_the_launch_floor_is_measured_and_plausible():
    from rung.judge.ceilings import launch_floor

    policy = Policy(warmup_s=0.1, min_samples=10, min_wall_s=0.1, target_rel_sem=0.01, max_s=2.0)
    floor = launch_floor(policy, Flusher())
    assert 0 < floor["launch_us"] < 20  # an empty kernel's CUPTI span
    assert floor["launch_us"] <= floor["launch_events_us"] < 50  # events add the launch latency
    assert 0 < floor["graph_replay_us"] < 50


def test_a_convolution_left_to_cudnns_default_is_named_tf32(climb):
    run = climb(CONV, CONV / "solutions" / "cudnn_default.py")
    correct = rung_of(run, "correct")
    assert correct.status == Status.FAILED, correct.message
    assert "the solution's convolution likely ran in TF32" in correct.message


def test_gpumode_matmul_into_its_buffer_passes_with_an_estimated_roofline_bound_by_launch(climb):
    run = climb(GPUMODE / "matmul_out", GPUMODE / "submissions" / "matmul_out_into_c.py")
    assert run.ok, [(r.name, r.status.value, r.message) for r in run.rungs]
    bench = rung_of(run, "bench").metrics["cases"][0]
    assert bench["cost_estimated"] and bench["flops"] == 2 * 128**3
    assert bench["bytes"] == 4 * 3 * 128**2  # a and b read, c written: c counted once
    roof = rung_of(run, "roofline")
    assert roof.status == Status.OK and roof.metrics["cost"] == "estimated"
    assert "[estimated cost]" in roof.message
    assert roof.metrics["cases"][0]["bound"] == "launch" and "bound by launch:" in roof.message


def test_gpumode_prefixsum_in_float32_passes_with_a_warning_and_is_timed(climb):
    run = climb(GPUMODE / "prefixsum", GPUMODE / "submissions" / "prefixsum_into_output.py")
    assert run.ok, [(r.name, r.status.value, r.message) for r in run.rungs]
    assert any("dtype torch.float32" in w for w in rung_of(run, "correct").metrics["warnings"])
    assert rung_of(run, "bench").metrics["timed_outputs_checked"] > 0


def test_kernelbench_gets_an_estimated_roofline(climb):
    run = climb(KERNELBENCH / "matmul.py", KERNELBENCH / "solutions" / "matmul_linear.py")
    assert run.ok, [(r.name, r.status.value, r.message) for r in run.rungs]
    case = rung_of(run, "bench").metrics["cases"][0]
    assert case["flops"] == 2 * 32 * 64 * 48 and case["flops_by_op"] == {"addmm": 2 * 32 * 64 * 48}
    assert rung_of(run, "roofline").metrics["cost"] == "estimated"
