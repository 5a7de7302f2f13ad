"""A time no solution can forge or distort, shown on the CPU with planted inputs: the judge's draw
of checked calls, the content-cache probe, the physical floor below the L2, ceilings that cannot
be poisoned, and the per-GPU lock. (bench itself needs CUDA: the GPU tests climb the cheats.)"""

from __future__ import annotations

import os
import random
import secrets
import threading
import time

import pytest
import torch

from rung import devices
from rung.common.ceilings_datasheet import datasheet
from rung.common.checked_calls import drawn, reservoir, slot_of
from rung.common.shm import TensorSpec
from rung.derived.roofline import roofline
from rung.judge import ceilings, gpu_facts, gpu_lock
from rung.judge.rungs.bench_checks import change_one, check_choice, restore
from rung.judge.rungs.bench_sizes import read_bytes
from rung.judge.rungs.outcome import Failed
from rung.solution.bench import Snapshots
from rung.spec import Device, RungResult, Status
from tests.conftest import FIXTURES
from tests.test_gpu_facts import fake_nvml


class _Harness:
    def __init__(self, n: int) -> None:
        self.buffers = {k: torch.zeros(3) for k in range(n)}

    def tensor(self, k: int) -> torch.Tensor:
        return self.buffers[k]


def _fill(key: bytes, calls: int, profiled: int = 20, slots: int = 4) -> dict[int, int]:
    """The solution side's copies of `calls` events-pass calls then `profiled` CUPTI-pass calls."""
    snaps = Snapshots(_Harness(slots), [[k] for k in range(slots)], 3, key)  # type: ignore[arg-type]
    for i in range(calls + profiled):
        snaps.last = torch.full((3,), float(i))
        (snaps.after if i < calls else snaps.profiled)(i)
    for k, shot in snaps.taken.items():
        assert torch.equal(snaps.slots[k][0], torch.full((3,), float(shot["call"])))
    return {k: shot["call"] for k, shot in snaps.taken.items()}


def test_a_replaced_random_source_does_not_steer_which_calls_are_checked(monkeypatch):
    """Planted: the stdlib's draws replaced so a reservoir drawn from them keeps the first calls."""
    key = secrets.token_bytes(16)
    honest = _fill(key, 500)
    monkeypatch.setattr(secrets, "randbelow", lambda n: n - 1)
    monkeypatch.setattr(random, "randrange", lambda *a, **k: 10**9)
    monkeypatch.setattr(os, "urandom", lambda n: b"\xff" * n)
    assert _fill(key, 500) == honest == drawn(key, 4, 500, 20)  # the judge's recount agrees
    assert max(c for k, c in honest.items() if k < 3) >= 3  # not merely the first calls
    assert 500 <= honest[3] < 520  # the last slot is the CUPTI pass's: it is checked too


def test_the_judges_draw_reaches_every_part_of_the_timed_calls():
    kept = [c for _ in range(200) for c in reservoir(secrets.token_bytes(16), 4, 400).values()]
    assert sum(c < 200 for c in kept) / len(kept) == pytest.approx(0.5, abs=0.08)
    assert all(slot_of(b"k", n, 4) == n for n in range(4))


@pytest.mark.parametrize(
    ("shots", "calls", "samples", "says"),
    [
        ([0, 1, 2], 400, 400, "where the judge's draw put call"),  # steered to the first calls
        (None, 400, 399, "counted 400 timed calls"),  # a count that is not the events pass's
        ("missing", 400, 400, "slot 2 came back holding timed call None"),
        ("extra", 400, 400, "4 checked outputs came back where the judge drew 3"),
    ],
)
def test_checked_calls_other_than_the_judges_draw_fail(shots, calls, samples, says):
    key = secrets.token_bytes(16)
    held = drawn(key, 4, calls, 0)
    came = [{"slot": k, "call": c} for k, c in held.items()]
    if shots == "missing":
        came = came[:2]
    elif shots == "extra":
        came = [*came, {"slot": 4, "call": 0}]
    elif shots is not None:
        came = [{"slot": k, "call": c} for k, c in enumerate(shots)]
    with pytest.raises(Failed, match=says):
        check_choice("case", came, key, 4, calls, (samples, 0))
    check_choice("case", [{"slot": k, "call": c} for k, c in held.items()], key, 4, calls, (calls, 0))


def _sample_keyed_cache():
    """Planted: answers kept by a sample of each input's values, as the content cache on the H100."""
    kept: dict[tuple[float, ...], torch.Tensor] = {}

    def custom_kernel(x: torch.Tensor) -> torch.Tensor:
        probe = tuple(x[:: max(1, x.numel() // 4)].tolist())
        if probe not in kept:
            kept[probe] = 2 * x
        return kept[probe]

    return custom_kernel


def test_a_set_changed_in_one_element_catches_a_content_cache_and_not_an_honest_kernel():
    x = torch.arange(1000, dtype=torch.float32) / 7
    pristine = x.clone()
    cached = _sample_keyed_cache()
    cached(x)  # the timed calls saw the set
    caught = 0
    for _ in range(20):
        undo = change_one((x,))
        assert (
            len(undo) == 1 and int((x != pristine).sum()) == 1 and set(x.tolist()) <= set(pristine.tolist())
        )
        caught += not torch.equal(cached(x), 2 * x)  # the honest kernel's answer is the reference's
        restore(undo)
        assert torch.equal(x, pristine)  # the judge's copy as it was, for the reference's timing
    assert caught >= 18  # missed only where the changed element is one the cache samples


def test_inputs_no_element_of_which_can_change_are_left_alone():
    ones, ints = torch.ones(8), torch.arange(5)
    assert change_one((ones, ints)) == [] and torch.equal(ones, torch.ones(8))  # constant floats, ints
    pair = torch.tensor([1.0, 2.0])
    assert len(change_one((torch.arange(5), pair))) == 1 and pair.tolist() in ([2.0, 2.0], [1.0, 1.0])


def test_bytes_read_leave_out_an_output_buffer_handed_in_among_the_inputs():
    x, y, out = torch.zeros(256), torch.zeros(256), torch.zeros(256)
    assert read_bytes((x, y), [TensorSpec.of(out)]) == 1024  # one input shaped as the output left out
    assert read_bytes((x, torch.zeros(8)), [TensorSpec.of(torch.zeros(3))]) == 1024 + 32


H100 = Device(
    kind="cuda",
    name="NVIDIA H100 80GB HBM3",
    ceilings={"dram_gbps": 3000.0, "fp32_vector_tflops": 50.0, "l2_bytes": 50 * 2**20},
)


def _roof(case: dict, device: Device = H100) -> RungResult:
    base = {"case": {"n": 1}, "flops": 0, "math": "fp32_vector", "rel_sem": 0.001}
    return roofline({"bench": RungResult("bench", Status.OK, metrics={"cases": [{**base, **case}]})}, device)


def test_a_problem_smaller_than_the_l2_still_has_a_floor():
    """A 33.6 MB add on a 50 MB L2 (22.4 MB of inputs), on a 3.35 TB/s GPU: before, no floor."""
    moved, read = 33_600_000, 22_400_000
    r = _roof({"bytes": moved, "input_bytes": read, "median_ms": read / 3.6e12 * 1e3})  # inputs at 3.6 TB/s
    assert r.status == Status.FAILED and "physically impossible" in r.message, r.message
    assert f"the {read} bytes that must come from DRAM" in r.message
    assert _roof({"bytes": moved, "median_ms": read / 3.6e12 * 1e3}).status == Status.OK  # as before: none
    # honest: its inputs at 93% of the datasheet, its writes still in the L2 (150% of "roofline")
    honest = _roof({"bytes": moved, "input_bytes": read, "median_ms": read / 3.1e12 * 1e3})
    assert honest.status == Status.OK, honest.message


def test_datasheets_are_matched_by_nvml_name():
    assert datasheet("NVIDIA H100 80GB HBM3")["dram_gbps"] == 3350.0
    assert datasheet("NVIDIA H100 PCIe")["dram_gbps"] == 2000.0
    assert datasheet("NVIDIA H100 SXM5 94GB")["dram_gbps"] == 3350.0  # a variant: its family's fastest
    assert datasheet("NVIDIA L40S")["dram_gbps"] == 864.0 and datasheet("NVIDIA L4")["dram_gbps"] == 300.0
    assert datasheet("NVIDIA A100-SXM4-40GB")["dram_gbps"] == 1555.0
    assert datasheet("NVIDIA GeForce RTX 4090")["bf16_tensor_tflops"] == 165.2
    for name in ("NVIDIA H200", "NVIDIA GH200 480GB", "NVIDIA B200", "NVIDIA GeForce RTX 5090"):
        assert datasheet(name) is not None, name
    assert datasheet("NVIDIA L400") is None and datasheet("Some GPU") is None


def test_ceilings_far_below_the_datasheet_are_named():
    """Planted: the poisoned H100 measurement of the issue, 177 bf16 TFLOP/s of 989."""
    poisoned = {"dram_gbps": 3000.0, "bf16_tensor_tflops": 177.0, "tf32_tensor_tflops": 300.0}
    assert ceilings.far_below_datasheet(poisoned, "NVIDIA H100 80GB HBM3") == "bf16_tensor_tflops 177 of 990"
    alone = {"dram_gbps": 3000.0, "bf16_tensor_tflops": 700.0, "tf32_tensor_tflops": 360.0}
    assert ceilings.far_below_datasheet(alone, "NVIDIA H100 80GB HBM3") == ""
    assert ceilings.far_below_datasheet(poisoned, "Some GPU") == ""  # no datasheet: nothing to hold to


def test_ceilings_the_judge_refused_are_never_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("RUNG_CACHE_DIR", str(tmp_path))
    dev = Device(kind="cuda", name="NVIDIA H100 80GB HBM3", driver="580", nvml={"uuid": "GPU-a"})
    refused = {"bf16_tensor_tflops": 177.0, "not_cached": "another process used the GPU during it"}
    assert devices.remember(dev, refused) is False and devices.cached(dev) is None
    assert devices.remember(dev, {"bf16_tensor_tflops": 700.0}) is True
    assert devices.cached(dev) == {"bf16_tensor_tflops": 700.0}
    other_card = Device(kind="cuda", name=dev.name, driver="580", nvml={"uuid": "GPU-b"})
    clocked = Device(kind="cuda", name=dev.name, driver="580", nvml={"uuid": "GPU-a", "app_sm_mhz": 1200})
    assert devices.cached(other_card) is None and devices.cached(clocked) is None


def _with_processes(pids, utilization=0):
    nvml = fake_nvml()
    nvml.nvmlDeviceGetComputeRunningProcesses = lambda h: [type("P", (), {"pid": p})() for p in pids]
    nvml.nvmlDeviceGetGraphicsRunningProcesses = lambda h: []
    nvml.nvmlDeviceGetUtilizationRates = lambda h: type("U", (), {"gpu": utilization})()
    return nvml


def test_other_processes_on_the_gpu_are_seen():
    assert gpu_facts.others_using("GPU-abc", {10}, nvml=_with_processes([10]))["busy"] is False
    seen = gpu_facts.others_using("GPU-abc", {10, 11}, nvml=_with_processes([10, 11, 77]))
    assert seen["busy"] and seen["other_pids"] == [77]
    # a container: NVML lists the host's ids, none ours; only a count beyond ours says others are there
    assert gpu_facts.others_using("GPU-abc", {10}, nvml=_with_processes([9001]))["busy"] is False
    assert gpu_facts.others_using("GPU-abc", {10}, nvml=_with_processes([9001, 9002]))["busy"] is True
    # before this process works, utilization shows others a container hides
    idle = gpu_facts.others_using("GPU-abc", {10}, idle_before=True, nvml=_with_processes([], 87))
    assert idle["busy"] and idle["utilization_pct"] == 87


def test_a_second_check_waits_for_the_gpus_lock(tmp_path, monkeypatch):
    monkeypatch.setenv("RUNG_CACHE_DIR", str(tmp_path))
    order: list[str] = []
    first_in = threading.Event()

    def first() -> None:
        with gpu_lock.held("GPU-abc", 5):
            first_in.set()
            time.sleep(0.3)
            order.append("first out")

    t = threading.Thread(target=first)
    t.start()
    first_in.wait(5)
    with gpu_lock.held("GPU-abc", 5) as waited:
        order.append("second in")
    t.join()
    assert order == ["first out", "second in"] and waited > 0.1
    busy = pytest.raises(gpu_lock.GpuBusy, match="another check held GPU GPU-abc")
    with gpu_lock.held("GPU-abc", 5), busy, gpu_lock.held("GPU-abc", 0.1):
        pass
    with gpu_lock.held("GPU-xyz", 0.1):  # another GPU's lock is its own
        pass


@pytest.mark.parametrize(
    ("bench_us", "ncu_us", "verdict"),
    [
        (7.5, 14.8, "contradicted"),  # the figure-rewriting kernel on an H100
        (7.0, 14.3, "contradicted"),  # its profiler-aware one
        (8.13, 9.34, "witnessed"),  # the fidelity table's honest readings, at their worst per class
        (10.1, 11.36, "witnessed"),
        (43.94, 45.25, "witnessed"),
        (175.62, 178.18, "witnessed"),
        (160.0, 178.18, "contradicted"),  # 10% under at 178 us
        (None, 14.8, "unwitnessed"),  # bench did not time the case in this judge
    ],
)
def test_bench_figures_faster_than_nsight_computes_witness_fail(bench_us, ncu_us, verdict):
    from rung.judge import witness

    profiled = RungResult("profile", Status.OK, "2 kernels", {"kernels": [{"total_us": ncu_us / 2}] * 2})
    judged = witness.judged(profiled, None if bench_us is None else bench_us / 1e3, {"n": 1})
    assert judged.metrics["witness"]["verdict"] == verdict
    assert (judged.status == Status.FAILED) == (verdict == "contradicted")
    if verdict == "contradicted":
        assert judged.message.startswith("bench's figure for case {'n': 1}") and "2 kernels" in judged.message


TINY = FIXTURES / "tiny"
DOUBLES = "import torch\n\n\ndef custom_kernel(x):\n    return x * 2\n"
# Planted: right, except where ncu's injection library is named in its environment.
NCU_AWARE = (
    "import os\n\n\ndef custom_kernel(x):\n    out = x * 2\n"
    "    if any('INJECTION' in k for k in os.environ):\n        out[len(out) // 8 :] = 0\n    return out\n"
)


def _tiny_session(tmp_path, source: str = DOUBLES):
    from rung.common.messages import JudgeHello
    from rung.judge.session import Session

    hello = {
        "problem": str(TINY),
        "source": source,
        "solution_name": "s.py",
        "run_dir": str(tmp_path / "run"),
    }
    return Session(JudgeHello(**hello, seed=3))


def _planted_link(scratch, x):
    elsewhere = scratch.parent / "right.bin"
    elsewhere.write_bytes((2 * x).numpy().tobytes())
    (scratch / "profile_outputs.bin").symlink_to(elsewhere)


@pytest.mark.parametrize(
    ("plant", "says"),
    [
        (lambda s, x: (s / "profile_outputs.bin").write_bytes((2 * x).numpy().tobytes()), ""),
        (
            lambda s, x: (s / "profile_outputs.bin").write_bytes((2 * x[:512]).numpy().tobytes() * 8),
            "3584 of 4096 elements outside",
        ),
        (
            lambda s, x: (s / "profile_outputs.bin").write_bytes((2 * x).double().numpy().tobytes()),
            "32768 bytes of outputs came back where the reference's outputs hold 16384",
        ),
        (lambda s, x: (s / "profile_outputs.bin").write_bytes(b""), "0 bytes of outputs came back"),
        (lambda s, x: None, "did not come back (profile_outputs.bin: no such file)"),
        (_planted_link, "did not come back (profile_outputs.bin: a symbolic link)"),
    ],
    ids=["right", "an_eighth_repeated", "float64", "empty", "missing", "linked"],
)
def test_the_profiled_calls_outputs_are_compared_by_the_judge(tmp_path, plant, says):
    """The judge reads the bytes the profile target wrote, in the reference's shapes, and compares
    them itself: only the right answer passes; the file is gone afterwards."""
    from rung.judge import profiled_call

    session = _tiny_session(tmp_path)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    inputs = session.inputs({"n": 4096}, 7)
    plant(scratch, inputs[0])
    wrong = profiled_call.wrong_answer(session, inputs, scratch)
    assert (wrong == "") == (says == "") and says in wrong, wrong
    assert not (scratch / "profile_outputs.bin").exists()


def test_a_solution_doing_less_work_under_nsight_compute_fails_profile(tmp_path, monkeypatch):
    """The real target under a stand-in ncu that names its injection library as ncu does: the
    planted solution halves nothing anywhere else, and profile FAILS naming the profiled call."""
    from rung.judge.rungs.profile import profile
    from tests.test_profile import EXPORT, fake_ncu

    lib = tmp_path / "nsight-compute" / "target" / "libInjection.so"
    lib.parent.mkdir(parents=True)
    lib.write_bytes(b"")
    body = (
        f"import os, shutil, subprocess\nshutil.copy({str(EXPORT)!r}, REPORT)\n"
        f"sys.exit(subprocess.call(TARGET, env={{**os.environ, 'CUDA_INJECTION64_PATH': {str(lib)!r}}}))"
    )
    fake_ncu(tmp_path, monkeypatch, body)
    session = _tiny_session(tmp_path, NCU_AWARE)
    session.timeout_s = 120
    r = profile(session, {})
    assert r.status == Status.FAILED and r.metrics == {"profiled_call": "wrong"}, r.message
    assert r.message.startswith("wrong answer in the call Nsight Compute profiled (case {'n': 4096}): ")
