"""On a CUDA device: bench, roofline, trace, profile and device ceilings, and their failure modes.

Marked `gpu`; skipped, saying so, where no CUDA device is present (CI has none). Run them with
`make test-gpu` or bench/gpu_suite.sh on a GPU machine.
"""

from __future__ import annotations

import pytest
import torch

from rung import api, knobs
from rung.spec import Status
from tests.conftest import FIXTURES, PROBLEMS, rung_of

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine"),
]
VECTOR_ADD = PROBLEMS / "vector_add"


def test_device_ceilings_are_measured_and_plausible(tmp_path):
    dev = api.device(tmp_path)
    assert dev.kind == "cuda" and dev.arch.startswith("sm_")
    assert 500 < dev.ceilings["dram_gbps"] < 10_000
    assert dev.ceilings["dram_gbps"] == max(dev.ceilings["dram_copy_gbps"], dev.ceilings["dram_add_gbps"])
    assert dev.ceilings["l2_bytes"] == torch.cuda.get_device_properties(0).L2_cache_size
    assert dev.ceilings["bf16_tensor_tflops"] > dev.ceilings["fp32_vector_tflops"] > 1


def test_the_device_record_holds_what_nvml_says_of_this_gpu(tmp_path):
    dev = api.device(tmp_path)
    facts = dev.nvml
    assert facts["available"] is True, facts
    assert facts["uuid"] == f"GPU-{torch.cuda.get_device_properties(0).uuid}"  # this GPU, not NVML's 0
    assert facts["name"] == dev.name and facts["driver"] == dev.driver
    assert 0 < facts["sm_mhz"] <= facts["max_sm_mhz"] and facts["power_limit_w"] > 0
    assert isinstance(facts["clock_reasons"], list) and facts["ecc_mode"] in ("enabled", "disabled", None)
    assert set(facts["unread"]) <= set(facts)  # every fact NVML could not read is named, and why


def test_bench_and_roofline_on_the_tuned_vector_add(climb):
    run = climb(VECTOR_ADD, VECTOR_ADD / "solutions" / "correct" / "tuned.py")
    assert run.ok, [(r.name, r.status.value, r.message) for r in run.rungs]
    bench = rung_of(run, "bench")
    assert bench.status == Status.OK
    for case in bench.metrics["cases"]:
        for key in ("median_ms", "mean_ms", "min_ms", "p20_ms", "p80_ms", "std_ms", "sem_ms", "samples"):
            assert key in case, key
        assert case["samples"] >= 10 and case["min_ms"] <= case["median_ms"] <= case["p80_ms"]
        assert case["reference"]["median_ms"] > 0 and case["speedup_vs_reference_err"] >= 0
        assert len(case["clocks"]) == 2 and case["clocks"][0]["sm_mhz"] > 0, case["clocks"]
        assert case["timing"] == "events" and case["kernels_per_call"] == 1, case  # the profiler off
        assert case["median_ms"] >= case["cupti"]["median_ms"] * 0.98  # events include launch latency
        assert case["input_sets"] >= 2
        assert {"check", "solution", "reference"} <= set(case["wall_s"])  # where the time went
    small = bench.metrics["cases"][0]
    assert "graph" in small or small["median_ms"] >= 0.020
    if "graph" in small:  # many calls per replay: one launch latency spread over them all
        assert small["graph"]["calls_per_replay"] >= 8
        assert small["graph"]["median_ms"] < small["median_ms"], small
        assert small["graph"]["checked"]["copied"], small  # its replayed output checked too
    roof = rung_of(run, "roofline")
    assert roof.status == Status.OK
    assert all(c["bound"] == "memory" for c in roof.metrics["cases"])
    assert 0.3 < roof.metrics["cases"][-1]["pct_of_roofline"] <= 1.05
    trace = rung_of(run, "trace")
    assert trace.status == Status.OK and len(trace.metrics["cases"]) == len(bench.metrics["cases"])
    for case in trace.metrics["cases"]:
        (kernel,) = case["kernels"]  # one Triton kernel a call, as bench counted
        assert "add" in kernel["name"] and kernel["launches_per_call"] == 1 and case["copies_per_call"] == 0
        assert case["busy_us"] <= case["span_us"] * 1.001
    profile = rung_of(run, "profile")
    assert profile.status == Status.OK, profile.message
    hottest = profile.metrics["kernels"][0]
    assert "add" in hottest["name"] and hottest["reading"].startswith("memory-bound"), hottest
    assert 1000 < hottest["dram_gbps"] < 5000  # the last case is 2^28 floats: DRAM, not L2
    assert hottest["speed_of_light"]["dram_pct"] > 50 and hottest["launch"]["grid"] > 0, hottest
    assert 0.85 < profile.metrics["excess_traffic_x"] < 1.2, profile.metrics  # the L2 may keep some writes
    assert len(profile.message.splitlines()) < 40
    assert any(a.endswith("report.ncu-rep") for a in profile.artifacts)
    assert profile.metrics["witness"]["verdict"] == "witnessed", profile.metrics["witness"]


def test_the_tuned_softmax_profile_and_trace_hold_its_own_kernel_only(climb):
    """No kernel of rung's (poison, flush, copies) or of the reference is profiled or counted."""
    softmax = PROBLEMS / "softmax"
    run = climb(softmax, softmax / "solutions" / "correct" / "tuned.py")
    profile = rung_of(run, "profile")
    assert profile.status == Status.OK, profile.message
    assert [k["name"] for k in profile.metrics["kernels"]] == ["softmax_kernel"], profile.message
    assert profile.metrics["launches"] == 1 and profile.metrics["excess_traffic_x"] < 1.2
    for case in rung_of(run, "trace").metrics["cases"]:
        assert [k["name"] for k in case["kernels"]] == ["softmax_kernel"], case


def test_a_kernel_wrong_at_benchmark_size_is_never_timed(climb):
    run = climb(VECTOR_ADD, VECTOR_ADD / "solutions" / "wrong" / "small_only.py")
    assert rung_of(run, "scale").status == Status.FAILED
    assert rung_of(run, "bench").status == Status.SKIPPED
    assert rung_of(run, "bench").message == "needs scale, which is FAILED"


def test_a_crash_under_timing_keeps_what_was_measured(climb):
    run = climb(VECTOR_ADD, FIXTURES / "crash_while_timed.py")
    bench = rung_of(run, "bench")
    assert bench.status == Status.ERROR
    assert "exited with code 9" in bench.message
    assert len(bench.metrics["measured_before"]) == 2  # the 2^20 and 2^24 cases


GPU_CHEATS = FIXTURES / "gpu_cheats"


@pytest.mark.parametrize(
    ("solution", "says"),
    [
        ("side_stream.py", ("still had work running after they returned", "wrong answer while timed")),
        ("patched_timer.py", ("timing functions replaced while timed: torch.cuda.Event.elapsed_time",)),
        ("stale_when_timed.py", ("wrong answer while timed", "not the checked outputs' shape")),
        ("profiler_aware.py", ("wrong answer while timed under the profiler (the CUPTI pass)",)),
        ("capture_aware.py", ("the CUDA graph pass: captured call",)),
        ("call_steering.py", ("wrong answer while timed",)),
        ("content_cache.py", ("a content cache",)),
    ],
)
def test_a_cheat_that_only_shows_while_timed_fails_bench(climb, solution, says):
    with knobs.scoped(RUNG_SKIP="profile"):
        run = climb(VECTOR_ADD, GPU_CHEATS / solution)
    bench = rung_of(run, "bench")
    assert bench.status == Status.FAILED, [(r.name, r.status.value, r.message) for r in run.rungs]
    assert any(s in bench.message for s in says), bench.message
    assert not run.ok


def test_a_solution_rewriting_its_own_processs_figures_is_contradicted_by_nsight_compute(climb):
    """Planted: it halves what rung's solution-side measuring returns; ncu, in its own process,
    measures the profiled call, and the physical floor holds the largest case too."""
    run = climb(VECTOR_ADD, GPU_CHEATS / "figure_rewriting.py")
    profile, roof = rung_of(run, "profile"), rung_of(run, "roofline")
    assert profile.status == Status.FAILED, profile.message
    assert profile.message.startswith("bench's figure for case {'n': 268435456}"), profile.message
    assert profile.metrics["witness"]["verdict"] == "contradicted"
    assert roof.status == Status.FAILED and "physically impossible" in roof.message, roof.message
    assert not run.ok


def test_the_stack_holds_nothing_to_walk_to_on_the_gpu(climb):
    run = climb(FIXTURES / "tiny", FIXTURES / "hostile" / "stack_walk.py")
    assert rung_of(run, "correct").status == Status.FAILED


def test_timed_outputs_are_checked_and_the_confinement_holds_on_the_gpu(climb):
    run = climb(VECTOR_ADD, VECTOR_ADD / "solutions" / "correct" / "naive.py")
    assert run.ok, [(r.name, r.status.value, r.message) for r in run.rungs]
    assert rung_of(run, "bench").metrics["timed_outputs_checked"] >= 2 * len(
        rung_of(run, "bench").metrics["cases"]
    )
    assert rung_of(run, "load").metrics["confinement"]["filesystem"] == "landlock", rung_of(
        run, "load"
    ).metrics


def test_an_implausible_cost_model_is_called_out(climb):
    run = climb(FIXTURES / "lying_cost", FIXTURES / "lying_cost" / "solutions" / "copy.py")
    roof = rung_of(run, "roofline")
    assert roof.status == Status.FAILED
    assert "likely a cost-model error" in roof.message


def test_the_poison_fill_inside_a_call_is_not_counted_as_the_solutions_kernel():
    """Planted: an output the solution allocates with torch.empty is filled by rung (FillFunctor)
    inside the call; guard's kernel names (and every reader of a call's work) leave it out."""
    from rung.common.poison import poisoned_allocations
    from rung.solution.kernel_names import KernelNames

    x = torch.randn(1 << 20, device="cuda")

    def solution(x):
        out = torch.empty_like(x)  # poisoned: a fill kernel of rung's, launched inside the call
        return torch.mul(x, 2, out=out)

    solution(x)
    torch.cuda.synchronize()
    with poisoned_allocations(), KernelNames(True) as seen:
        solution(x)
        torch.cuda.synchronize()
    assert not seen.error, seen.error
    assert len(seen.names) == 1 and "Fill" not in seen.names[0], seen.names


def test_scopes_trace_the_example_matmuls_main_loop_and_epilogue(climb):
    """Asked for, proton's instrumentation traces the phases rung marks in a kernel that marks none."""
    matmul = PROBLEMS / "matmul"
    with knobs.scoped(RUNG_SCOPES=1, RUNG_SKIP="profile"):
        run = climb(matmul, matmul / "solutions" / "correct" / "tuned.py")
    scopes = rung_of(run, "scopes")
    assert scopes.status == Status.OK, scopes.message
    (kernel,) = scopes.metrics["kernels"]
    names = [s["scope"] for s in kernel["scopes"]]
    assert any(n.startswith("loop L") for n in names) and "epilogue" in names, names
    assert kernel["scopes"][0]["scope"].startswith("loop L")  # the main loop holds most cycles
    assert any(a.endswith("trace.chrome_trace.json") for a in scopes.artifacts)
    assert len(scopes.message.splitlines()) < 12


def test_scopes_are_not_traced_unless_asked(climb):
    with knobs.scoped(RUNG_SKIP="profile"):
        run = climb(VECTOR_ADD, VECTOR_ADD / "solutions" / "correct" / "tuned.py")
    assert rung_of(run, "scopes").status == Status.SKIPPED
    assert "not asked for" in rung_of(run, "scopes").message


def test_a_solution_doing_less_work_under_nsight_compute_fails_profile(climb):
    """Planted: it recognises ncu's injection library and adds an eighth of the vector there; the
    judge compares the profiled call's outputs with the reference and fails the rung, naming it."""
    run = climb(VECTOR_ADD, GPU_CHEATS / "ncu_aware.py")
    assert rung_of(run, "bench").status == Status.OK  # honest wherever ncu is not
    profile = rung_of(run, "profile")
    assert profile.status == Status.FAILED, profile.message
    assert profile.message.startswith("wrong answer in the call Nsight Compute profiled"), profile.message
    assert profile.metrics["profiled_call"] == "wrong" and not run.ok


def test_a_triton_solution_computing_with_cublas_launched_no_triton_kernel(climb):
    """cuBLAS's gemv kernels look like no torch kernel by name; only the kernels the solution
    built or declared are its own, so the library's never pass for Triton's."""
    with knobs.scoped(RUNG_SKIP="profile"):
        run = climb(VECTOR_ADD, FIXTURES / "triton_calls_cublas.py")
    guard = rung_of(run, "guard")
    assert guard.status == Status.FAILED, guard.message
    assert guard.metrics["checks"]["kernel_launched"] == "fired"
    assert "kernel_launched: no triton kernel was launched during the call (only torch's: " in guard.message
    assert not run.ok


def test_a_solution_that_breaks_the_naming_of_its_kernels_is_not_verified(climb):
    with knobs.scoped(RUNG_SKIP="profile"):
        run = climb(VECTOR_ADD, FIXTURES / "unnameable.py")
    guard = rung_of(run, "guard")
    assert guard.status == Status.FAILED, guard.message
    assert "kernel_launched: the kernels the call ran could not be named" in guard.message
    assert not run.ok
