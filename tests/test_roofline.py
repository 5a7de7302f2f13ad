"""The roofline rung on figures alone (it runs in the controller): verdicts, the physical limit."""

import pytest

from rung.derived.roofline import roofline
from rung.spec import Device, RooflineCase, RungResult, Status

H200 = Device(
    kind="cuda",
    name="NVIDIA H200",
    ceilings={"dram_gbps": 4380.0, "fp32_vector_tflops": 50.0, "l2_bytes": 62914560},
)


def _climb(*cases: tuple[int, float], device: Device = H200) -> RungResult:
    """Cases of (bytes, measured us), no FLOPs to speak of."""
    bench = RungResult(
        "bench",
        Status.OK,
        metrics={
            "cases": [
                {"case": {"i": i}, "flops": 0, "bytes": b, "median_ms": us / 1e3, "math": "fp32_vector"}
                for i, (b, us) in enumerate(cases)
            ]
        },
    )
    return roofline({"bench": bench}, device)


def test_a_stream_at_the_dram_ceiling_is_at_roofline():
    r = _climb((3 * 4 * 2**28, 736.0))  # the 2^28 add: 4376 GB/s
    assert r.status == Status.OK
    assert r.message.startswith("at roofline")
    assert 0.99 < r.metrics["cases"][0]["pct_of_roofline"] < 1.0
    # what the rung writes is the typed shape readers go through (views.roofline_cases), key for key
    assert set(r.metrics["cases"][0]) == set(RooflineCase.__annotations__)


def test_a_slow_kernel_is_below_the_target():
    r = _climb((3 * 4 * 2**28, 1000.0))
    assert r.status == Status.OK
    assert r.message.startswith("below 90% of roofline")


def test_a_mid_sized_stream_may_beat_the_dram_ceiling_while_its_writes_sit_in_the_l2():
    r = _climb((3 * 4 * 2**24, 43.9))  # torch.add at 2^24 on an H200: 4586 GB/s, 105% of the ceiling
    assert r.status == Status.OK
    assert r.metrics["cases"][0]["pct_of_roofline"] > 1.04


def test_faster_than_the_datasheet_allows_is_physically_impossible():
    r = _climb((3 * 4 * 2**28, 736.0), (10 * 8 * 2**26, 125.0))  # ten times a 2^26 copy's bytes
    assert r.status == Status.FAILED
    assert r.message.startswith("physically impossible: case {'i': 1}")
    assert "NVIDIA H200 datasheet" in r.message
    assert "Either the timing is forged or the cost model is wrong" in r.message
    assert "likely a cost-model error" in r.message


def test_a_kernel_may_beat_the_measured_ceiling_but_not_the_datasheet():
    """The example vector add reads 104% of the measured copy ceiling at 2^24; the datasheet's
    4800 GB/s still allows it. 201 MB in 40 us (5033 GB/s) with no L2 to hold any is not."""
    old = Device(kind="cuda", name="NVIDIA H200", ceilings={"dram_gbps": 4380.0, "fp32_vector_tflops": 50.0})
    assert _climb((3 * 4 * 2**24, 43.0), device=old).status == Status.OK  # 107% of the measured ceiling
    assert _climb((3 * 4 * 2**24, 40.0), device=old).status == Status.FAILED
    assert _climb((3 * 4 * 2**24, 40.0)).status == Status.OK  # the L2 may hold 63 MB of it


def test_an_unknown_gpu_is_held_to_its_measured_ceilings_with_a_margin():
    other = Device(kind="cuda", name="Some GPU", ceilings={"dram_gbps": 1000.0, "fp32_vector_tflops": 10.0})
    assert _climb((10**9, 950.0), device=other).status == Status.OK  # 105% of the measured ceiling
    r = _climb((10**9, 880.0), device=other)  # 114%: past the 10% margin
    assert r.status == Status.FAILED and "measured ceilings x1.1 peak" in r.message


def test_the_margin_grows_with_the_measurement_uncertainty():
    noisy = RungResult(
        "bench",
        Status.OK,
        metrics={
            "cases": [{"case": {}, "flops": 0, "bytes": 4800 * 10**6, "median_ms": 0.97, "rel_sem": 0.02}]
        },
    )  # 3% under the datasheet's 1 ms, with a 2% standard error: inside 3 of them
    assert (
        roofline({"bench": noisy}, Device(kind="cuda", name="NVIDIA H200", ceilings=H200.ceilings)).status
        == Status.OK
    )


def test_no_cost_model_means_no_roofline():
    bench = RungResult("bench", Status.OK, metrics={"cases": [{"case": {}, "median_ms": 1.0}]})
    r = roofline({"bench": bench}, H200)
    assert r.status == Status.SKIPPED
    assert "cost model" in r.message


def _one(case: dict, device: Device = H200) -> RungResult:
    base = {"case": {"m": 256}, "math": "fp32_vector", "timing": "cupti"}
    return roofline({"bench": RungResult("bench", Status.OK, metrics={"cases": [{**base, **case}]})}, device)


def test_an_estimated_cost_is_labelled_on_every_line_and_in_the_figures():
    r = _one({"flops": 2 * 256**3, "bytes": 3 * 4 * 256**2, "median_ms": 0.02, "cost_estimated": True})
    assert r.status == Status.OK
    assert "cost estimated: FLOPs counted from the reference" in r.message.splitlines()[0]
    assert r.message.splitlines()[1].endswith("[estimated cost]")
    assert r.metrics["cost"] == "estimated" and r.metrics["cases"][0]["cost"] == "estimated"


def test_a_case_faster_than_its_estimate_is_not_called_impossible():
    """An estimate counts every input byte; a kernel may need less of them."""
    r = _one({"flops": 0, "bytes": 10 * 8 * 2**26, "median_ms": 0.125, "cost_estimated": True})
    assert r.status == Status.OK
    assert "faster than the estimate allows, so the estimate overcounts" in r.message
    given = _one({"flops": 0, "bytes": 10 * 8 * 2**26, "median_ms": 0.125})  # the problem's own cost
    assert given.status == Status.FAILED and given.message.startswith("physically impossible")


LAUNCH = Device(
    kind="cuda", name="NVIDIA H200", ceilings={**H200.ceilings, "launch_us": 2.1, "launch_events_us": 5.0}
)


def test_a_small_case_reads_against_the_launch_floor():
    """A 256^3 fp32 matmul's compute time is 0.67 us at 50 TFLOP/s; no launch takes under 2.1 us."""
    r = _one({"flops": 2 * 256**3, "bytes": 3 * 4 * 256**2, "median_ms": 0.0042}, LAUNCH)
    row = r.metrics["cases"][0]
    assert row["bound"] == "launch" and row["attainable_ms"] == pytest.approx(2.1e-3)
    assert row["pct_of_roofline"] == pytest.approx(0.5)  # 2.1 us of a 4.2 us call
    assert "bound by launch: 2.1 us floor" in r.message


def test_the_launch_floor_is_the_one_for_how_the_case_was_timed():
    events = _one({"flops": 0, "bytes": 4096, "median_ms": 0.010, "timing": "events"}, LAUNCH)
    assert events.metrics["cases"][0]["attainable_ms"] == pytest.approx(5.0e-3)
    large = _one({"flops": 0, "bytes": 3 * 4 * 2**28, "median_ms": 0.8}, LAUNCH)  # 736 us of memory time
    assert large.metrics["cases"][0]["bound"] == "memory"
