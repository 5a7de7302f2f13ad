"""The roofline rung on figures alone (it runs in the controller): verdicts, the plausibility floor."""

from rung.roofline import roofline
from rung.spec import Device, RungResult, Status

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


def test_a_slow_kernel_is_below_the_target():
    r = _climb((3 * 4 * 2**28, 1000.0))
    assert r.status == Status.OK
    assert r.message.startswith("below 90% of roofline")


def test_a_mid_sized_stream_may_beat_the_dram_ceiling_while_its_writes_sit_in_the_l2():
    r = _climb((3 * 4 * 2**24, 43.9))  # torch.add at 2^24 on an H200: 4586 GB/s, 105% of the ceiling
    assert r.status == Status.OK
    assert r.metrics["cases"][0]["pct_of_roofline"] > 1.04


def test_a_cost_model_the_kernel_beats_past_the_l2_is_called_out():
    r = _climb((3 * 4 * 2**28, 736.0), (10 * 8 * 2**26, 125.0))  # ten times a 2^26 copy's bytes
    assert r.status == Status.FAILED
    assert "likely a cost-model error" in r.message
    assert "{'i': 1}" in r.message


def test_without_the_l2_size_the_floor_is_the_whole_traffic():
    old = Device(kind="cuda", name="NVIDIA H200", ceilings={"dram_gbps": 4380.0, "fp32_vector_tflops": 50.0})
    assert _climb((3 * 4 * 2**24, 43.0), device=old).status == Status.FAILED  # 107% of the ceiling
    assert _climb((3 * 4 * 2**24, 43.0)).status == Status.OK


def test_no_cost_model_means_no_roofline():
    bench = RungResult("bench", Status.OK, metrics={"cases": [{"case": {}, "median_ms": 1.0}]})
    r = roofline({"bench": bench}, H200)
    assert r.status == Status.SKIPPED
    assert "cost model" in r.message
