"""How many input sets bench rotates through, and which ceiling a case reads against: every tensor
counted however nested; no more sets than the GPU's free memory holds twice over with half of it
left free."""

from __future__ import annotations

import torch

from rung.judge.rungs.bench_sizes import rotation

GIB = 2**30


def _meta(nbytes: int) -> torch.Tensor:
    return torch.empty(nbytes // 4, dtype=torch.float32, device="meta")


def test_nested_inputs_count_toward_the_rotation():
    # GPU MODE's grayscale at 16384: one tuple of a 3 GiB image and its 1 GiB output buffer.
    gpu_mode = ((_meta(3 * GIB), _meta(GIB)),)
    assert rotation(gpu_mode) == 2  # counted as 4 GiB a set, not as nothing (which gave 8)
    assert rotation((_meta(GIB // 8), _meta(GIB // 8))) == 8
    assert rotation(({"x": _meta(GIB // 2)}, 3)) == 4  # dict leaves and plain values


def test_free_memory_caps_the_rotation_down_to_the_set_already_made():
    big = ((_meta(3 * GIB), _meta(GIB)),)
    assert rotation(big, free_bytes=100 * GIB) == 2
    assert rotation(big, free_bytes=32 * GIB) == 2  # 1 + 16 GiB // 8 GiB
    # a second set (8 GiB) fits half of 18 GiB, but not with the own check's copy of the inputs
    # (4 GiB) and the later set's float64 inputs (8 GiB) beside it
    assert rotation(big, free_bytes=18 * GIB) == 1
    assert rotation(big, free_bytes=10 * GIB) == 1  # a second set would leave under half free
    small = (_meta(2**20),)
    assert rotation(small, free_bytes=8 * 2**20) == 3
    assert rotation(small, free_bytes=0) == 1


def test_what_a_case_needs_whatever_its_sets_caps_them():
    from rung.common.shm import TensorSpec

    # KernelBench's level 1 sigmoid: a 6 GiB float32 input and output, on an 80 GB GPU with the
    # judge's set 0, its float64 reference and the solution process's context already in place
    x = (_meta(6 * GIB),)
    out = [TensorSpec((6 * GIB // 4,), "float32", "cuda")]
    # two 6 GiB output slots, the solution's output, the check's copy and the own check's run:
    # 36 GiB; a second set adds 12 GiB placed and kept, and 12 GiB of float64 inputs
    assert rotation(x, free_bytes=50 * GIB, outputs=out) == 1
    assert rotation(x, free_bytes=60 * GIB, outputs=out) == 2  # 36 + 12 + 12 fits, and half allows 2
    assert rotation(x, free_bytes=60 * GIB) == 2  # unknown outputs: the inputs' own needs only


def test_the_ceiling_is_read_from_nested_inputs_too():
    from rung.judge.rungs.bench_sizes import math_of

    half = torch.empty(4, dtype=torch.float16, device="meta")
    assert math_of(((half, half, torch.empty(4, device="meta")),)) == "fp16_tensor"  # GPU MODE's matmul
    assert math_of((torch.empty(4, dtype=torch.int32), 3)) == "fp32_vector"


def test_the_sets_asked_for_replace_the_default_and_free_memory_still_caps_them():
    small = (_meta(2**20),)
    assert rotation(small, asked=1) == 1  # GPU MODE's benchmark mode: the same inputs every call
    assert rotation(small, asked=16) == 16  # more than the default's 8
    assert rotation(small, free_bytes=8 * 2**20, asked=16) == 3


def test_the_method_names_the_timer_the_sample_count_and_the_inputs():
    from rung.judge.rungs.bench_words import method

    one = method({"timing": "events", "samples": 100, "input_sets": 1})
    assert one.startswith("CUDA events around each call") and "the profiler off" in one
    assert "median of 100 calls" in one and one.endswith("the same inputs every call")
    events = method({"timing": "events", "samples": 37, "input_sets": 8})
    assert events.startswith("CUDA events") and events.endswith("8 input sets in turn")


def test_input_sets_that_read_apart_are_named_and_sets_that_agree_are_not():
    from rung.judge.rungs.bench_words import sets_apart

    case = {"case": {"m": 64}, "median_ms": 0.0405, "samples": 100}
    apart = sets_apart({**case, "per_set_median_ms": [0.0393, 0.0470, 0.0401, 0.0468, 0.0396]})
    assert apart.startswith("{'m': 64}: its 5 input sets read 39.3 to 47.0 us (19.0% apart)")
    assert not sets_apart({**case, "per_set_median_ms": [0.0403, 0.0405, 0.0408]})  # 1.2%: agree
    assert not sets_apart({**case, "samples": 8, "per_set_median_ms": [0.039, 0.047, 0.040]})  # too few calls
    small = {"case": {}, "median_ms": 0.005, "samples": 100, "per_set_median_ms": [0.004, 0.006]}
    assert not sets_apart(small)  # under 20 us a set's median is a launch's jitter
    assert not sets_apart({**case, "per_set_median_ms": [0.0393]})  # the same inputs every call


def test_idle_time_between_kernels_is_named_where_it_weighs_and_not_otherwise():
    from rung.judge.rungs.bench_words import idle_between_kernels

    # GPU MODE's sort at 10^5 (2026-12-06-f): 8 kernels, 73 us of a 116 us span idle
    sort = {
        "case": {"size": 100000},
        "cupti": {"median_ms": 0.1163},  # CUPTI's span; the headline is the events'
        "median_ms": 0.1191,
        "busy_ms": 0.0429,
        "gap_ms": 0.0734,
        "kernels_per_call": 8,
    }
    said = idle_between_kernels(sort)
    assert said.startswith("{'size': 100000}: the device sat idle 73.4 us of the 116.3 us span")
    assert "(busy 42.9 us)" in said and "another check can read otherwise" in said
    split_k = {
        **sort,
        "cupti": {"median_ms": 0.0393},
        "busy_ms": 0.0382,
        "gap_ms": 0.0011,
        "kernels_per_call": 2,
    }
    assert not idle_between_kernels(split_k)  # 1.1 us: under 2 us
    long_call = {**sort, "cupti": {"median_ms": 4.895}, "busy_ms": 4.872, "gap_ms": 0.0235}
    assert not idle_between_kernels(long_call)  # 23 us of a 4.9 ms span: under 5%
    assert not idle_between_kernels({k: v for k, v in sort.items() if k != "cupti"})  # no CUPTI pass


def test_buffers_freed_since_the_last_request_are_released_before_free_memory_is_read(tmp_path):
    from types import SimpleNamespace

    from rung.common.messages import SolutionStart
    from rung.judge.solution_process import KEEP_BYTES, SolutionProcess

    proc = SolutionProcess(SolutionStart(source="s.py", scratch=str(tmp_path)), {}, tmp_path)
    proc.child = SimpleNamespace(alive=True)  # type: ignore[assignment]
    asked = []
    proc.request = lambda op, params, timeout_s: asked.append(op) or {}  # type: ignore[method-assign]
    proc.release()
    assert asked == []  # nothing pending: no request
    proc.free([7], [torch.empty(KEEP_BYTES // 8)])  # half of what is kept for reuse: kept
    proc.release()
    assert asked == []
    proc.free([8], [torch.empty(KEEP_BYTES // 4)])  # over what is kept: freed with the next request
    proc.release()
    assert asked == ["release"]
