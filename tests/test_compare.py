"""The comparison: figures, NaN and Inf rules, poison detection, tolerance floors; both directions."""

from __future__ import annotations

import json
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
    assert c.metrics["nonfinite_mismatches"] == 1 and c.metrics["out_of_tolerance"] == 0
    assert c.message.startswith(
        "16.7% of the output never written; 2 of 6 elements outside atol=1e-05 rtol=1e-05: "
        "1 never written (still the poison the harness filled in), "
        "1 NaN or Inf where the reference is finite, 0 finite values off; first at (4,): got nan expected 1"
    )


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


def _mostly_unwritten() -> tuple[torch.Tensor, torch.Tensor]:
    """A kernel right where it wrote, which wrote 1 element in 8: what small_only.py leaves."""
    ref = torch.randn(64, 1024, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    got = ref.float()
    poison(got[8:])
    return got, ref


def test_a_mostly_unwritten_output_says_so_first_and_no_figure_reads_well():
    got, ref = _mostly_unwritten()
    c = compare(got, ref, FP32)
    assert not c.ok
    assert c.message.startswith("87.5% of the output never written; 57344 of 65536 elements outside")
    assert "57344 never written" in c.message and "0 finite values off" in c.message
    m = c.metrics
    assert (m["unwritten"], m["unwritten_pct"], m["out_of_tolerance"]) == (57344, 87.5, 0)
    # over the written eighth alone these read 2e-7, 164 dB and 1.0: the lie this guards against
    assert m["max_abs_err"] == m["mean_abs_err"] == m["mse"] == m["rmse"] == m["norm_rel_err"] == math.inf
    assert m["max_rel_err"] == math.inf and m["psnr_db"] == -math.inf
    assert m["cosine"] == pytest.approx(math.sqrt(1 / 8), rel=0.05)  # the share of ||ref|| delivered


def test_nan_where_the_reference_is_finite_is_counted_and_named():
    ref = torch.randn(1000, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    got = ref.float()
    got[10:22] = math.nan
    c = compare(got, ref, FP32)
    assert not c.ok and c.metrics["nonfinite_mismatches"] == c.metrics["nonfinite_where_ref_finite"] == 12
    assert c.metrics["unwritten"] == 0 and c.metrics["out_of_tolerance"] == 0
    assert c.message.startswith(
        "12 of 1000 elements outside atol=1e-05 rtol=1e-05: 12 NaN or Inf where the reference is finite, "
        "0 finite values off; first at (10,): got nan"
    )
    assert c.metrics["max_abs_err"] == math.inf and c.metrics["psnr_db"] == -math.inf
    assert "norm-wise" not in c.message  # inf by definition here, and not "the whole output is off"


def test_a_reference_nan_the_output_does_not_repeat_is_named():
    ref = torch.tensor([1.0, math.nan, math.inf], dtype=torch.float64)
    c = compare(torch.tensor([1.0, 2.0, 3.0]), ref, FP32)
    assert (
        not c.ok and c.metrics["nonfinite_mismatches"] == 2 and c.metrics["nonfinite_where_ref_finite"] == 0
    )
    assert "2 not repeating the reference's NaN or Inf" in c.message


def test_a_right_output_has_right_figures():
    ref = torch.randn(4096, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    c = compare(ref.float(), ref, FP32)
    m = c.metrics
    assert c.ok and (m["unwritten"], m["nonfinite_mismatches"], m["out_of_tolerance"]) == (0, 0, 0)
    assert 0 < m["mean_abs_err"] <= m["max_abs_err"] < 1e-6  # float32 rounding alone
    assert m["rmse"] == pytest.approx(math.sqrt(m["mse"])) and m["psnr_db"] > 140
    assert m["cosine"] == pytest.approx(1.0, abs=1e-12)


def test_repeated_specials_are_right_and_left_out_of_the_means():
    ref = torch.tensor([1.0, 2.0, math.nan, math.inf], dtype=torch.float64)
    got = torch.tensor([1.5, 2.0, math.nan, math.inf], dtype=torch.float64)
    m = compare(got, ref, Tolerance(atol=1.0, rtol=0.0)).metrics
    assert m["mismatches"] == 0 and m["max_abs_err"] == 0.5
    assert m["mean_abs_err"] == 0.25 and m["mse"] == 0.125  # over the two finite elements
    assert m["psnr_db"] == pytest.approx(10 * math.log10(4 / 0.125))


def test_an_unwritten_integer_element_is_missing_though_its_poison_is_finite():
    got = torch.arange(6, dtype=torch.int32)
    poison(got[4:])
    c = compare(got, torch.arange(6, dtype=torch.float64), Tolerance.for_dtype("int32"))
    assert not c.ok and c.metrics["unwritten"] == 2 and c.metrics["max_abs_err"] == math.inf


def test_error_against_an_all_zero_reference_has_no_psnr_and_leaves_the_floor_to_the_elements():
    zero = torch.zeros(8, dtype=torch.float64)
    fp8 = Tolerance.for_dtype("float8_e4m3fn", {"min_cosine": 0.0})
    c = compare(torch.full((8,), 0.05), zero, fp8)
    assert c.ok and math.isnan(c.metrics["psnr_db"])  # it read +inf before: noise over no signal
    assert compare(zero.float(), zero, fp8).metrics["psnr_db"] == math.inf


def _flat_softmax(rows: int, cols: int) -> torch.Tensor:
    """Softmax rows of mild logits: every value near 1/cols (1e-4 here), under float32's atol."""
    g = torch.Generator().manual_seed(0)
    return torch.softmax(0.5 * torch.randn(rows, cols, generator=g, dtype=torch.float64), dim=-1)


def test_an_output_off_everywhere_by_one_percent_fails_the_norm_wise_test():
    ref = _flat_softmax(4, 8192)
    assert float(ref.max()) * 1.01e-2 < FP32.atol  # each element's error is within atol
    c = compare((1.01 * ref).float(), ref, FP32)
    assert not c.ok and c.metrics["mismatches"] == 0
    assert c.metrics["norm_rel_err"] == pytest.approx(1e-2, rel=1e-4)
    assert c.message == (
        "norm-wise relative error 1.0e-02 > 1e-04 for float32: the whole output is off, not a few elements"
    )


def test_the_same_output_unscaled_passes_with_its_norm_wise_error():
    ref = _flat_softmax(4, 8192)
    c = compare(ref.float(), ref, FP32)
    assert c.ok and 0 < c.metrics["norm_rel_err"] < 1e-7  # float32 rounding alone: about 0.42 u


def test_a_bfloat16_output_rounded_from_the_reference_passes():
    ref = torch.randn(256, 256, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    c = compare(ref.to(torch.bfloat16), ref, Tolerance.for_dtype("bfloat16"))
    assert c.ok and 1e-3 < c.metrics["norm_rel_err"] < 2**-8  # near 2^-9, under bfloat16's u


def test_a_problem_sets_the_norm_wise_ceiling():
    ref = _flat_softmax(4, 8192)
    scaled = (1.01 * ref).float()
    assert compare(scaled, ref, Tolerance.for_dtype("float32", {"max_norm_rel_err": 2e-2})).ok
    c = compare(ref.float() * 1.001, ref, Tolerance.for_dtype("float32", {"max_norm_rel_err": 1e-5}))
    assert not c.ok and "norm-wise relative error 1.0e-03 > 1e-05 for float32" in c.message


def test_a_zero_reference_leaves_the_verdict_to_the_elements():
    zero = torch.zeros(3, 4, dtype=torch.float64)
    c = compare(zero.float(), zero, FP32)
    assert c.ok and c.metrics["norm_rel_err"] == 0.0
    small = torch.full((3, 4), 0.5 * FP32.atol)  # within atol of 0: no division by zero, no failure
    c = compare(small, zero, FP32)
    assert c.ok and c.metrics["norm_rel_err"] == math.inf
    assert not compare(small * 4, zero, FP32).ok  # beyond atol: the elements say so


def test_integer_outputs_must_match_exactly():
    tol = Tolerance.for_dtype("int32")
    ref = torch.arange(5, dtype=torch.int32)
    assert compare(ref.clone(), ref, tol).ok
    assert not compare(ref + 1, ref, tol).ok


def _outputs_to_judge() -> list[tuple[str, torch.Tensor, torch.Tensor, Tolerance]]:
    torch.manual_seed(0)
    ref = torch.randn(64, 33, dtype=torch.float64)
    one_off = ref.float().clone()
    one_off[5, 7] += 1.0
    special = ref.clone()
    special[0, :3] = torch.tensor([math.nan, math.inf, -math.inf], dtype=torch.float64)
    wrong_special = special.float().clone()
    wrong_special[0, 1] = -math.inf
    unwritten = ref.float().clone()
    poison(unwritten[3])
    noisy_floor = Tolerance(atol=1.0, rtol=0.0, min_psnr_db=60.0)
    mostly_unwritten, its_ref = _mostly_unwritten()
    nans = ref.float().clone()
    nans[1, :12] = math.nan
    return [
        ("right", ref.float(), ref, FP32),
        ("one element off", one_off, ref, FP32),
        ("scaled by 1.01", (ref * 1.01).float(), ref, FP32),
        ("matching specials", special.float(), special, FP32),
        ("a wrong infinity", wrong_special, special, FP32),
        ("a row never written", unwritten, ref, FP32),
        ("noisy under a PSNR floor", (ref + 0.01 * torch.randn_like(ref)).float(), ref, noisy_floor),
        ("empty", torch.zeros(0), torch.zeros(0, dtype=torch.float64), FP32),
        ("mostly unwritten", mostly_unwritten, its_ref, FP32),
        ("NaN where the reference is finite", nans, ref, FP32),
        (
            "mostly unwritten under fp8 floors",
            mostly_unwritten,
            its_ref,
            Tolerance.for_dtype("float8_e4m3fn"),
        ),
    ]


@pytest.mark.parametrize("case", _outputs_to_judge(), ids=lambda c: c[0])
def test_the_fast_path_gives_the_full_comparisons_verdict_and_figures_where_it_fails(case):
    _, got, ref, tol = case
    full, fast = compare(got, ref, tol), compare(got, ref, tol, figures=False)
    assert fast.ok == full.ok
    assert fast.metrics["mismatches"] == full.metrics["mismatches"]
    if not full.ok:
        # as JSON: a NaN the solution wrote is in both, and NaN != NaN in a dict comparison
        assert fast.message == full.message
        assert json.dumps(fast.metrics, sort_keys=True) == json.dumps(full.metrics, sort_keys=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int32])
def test_compared_in_chunks_the_verdict_figures_and_first_mismatches_are_the_whole_outputs(
    monkeypatch, dtype
):
    # A 6 GiB output compared whole needed several times its size in float64 work buffers; in
    # chunks it needs a few chunks' worth. Chunks of 7 elements across a 2-D output with poison,
    # NaN, Inf and mismatches on both sides of chunk boundaries must read as one pass does.
    import rung.judge.compare as cmp

    g = torch.Generator().manual_seed(5)
    ref = (torch.randn(9, 11, generator=g) * 10).to(dtype)
    got = ref.clone()
    got[0, 6] += 3  # the last element of the first chunk
    got[0, 7] += 3  # the first of the second
    got[8, 10] += 1
    poison(got[3, 2:5])
    if dtype.is_floating_point:
        ref[5, 5], got[5, 5] = math.nan, math.nan  # a repeated NaN: right
        got[6, 0] = math.inf
    tol = Tolerance.for_dtype(str(dtype).removeprefix("torch."), {})
    whole = compare(got, ref, tol)
    monkeypatch.setattr(cmp, "CHUNK_ELEMENTS", 7)
    chunked = compare(got, ref, tol)
    assert (chunked.ok, chunked.message) == (whole.ok, whole.message) and not whole.ok
    assert chunked.metrics.keys() == whole.metrics.keys()
    for key, value in whole.metrics.items():
        if isinstance(value, (list, int)):  # counts, and the mismatches (a NaN among them)
            assert json.dumps(chunked.metrics[key]) == json.dumps(value), key
        else:
            assert chunked.metrics[key] == pytest.approx(value, nan_ok=True), key
    assert [m["index"] for m in chunked.metrics["first_mismatches"]][:2] == [[0, 6], [0, 7]]
    monkeypatch.setattr(cmp, "CHUNK_ELEMENTS", 7)
    assert compare(ref.clone(), ref, tol, figures=False).ok  # the fast path, chunked


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64])
def test_allclose_in_chunks_is_torch_allclose_with_the_whole_outputs_figures(monkeypatch, dtype):
    # KernelBench's own verdict on a 6 GiB output: torch.allclose's, without its temporaries.
    import rung.judge.compare as cmp

    monkeypatch.setattr(cmp, "CHUNK_ELEMENTS", 7)
    g = torch.Generator().manual_seed(3)
    ref = (torch.randn(9, 11, generator=g) * 10).to(dtype)
    if dtype.is_floating_point:
        ref[2, 2] = math.inf  # an equal Inf is close, as torch.allclose has it
    tol = 1e-2 if dtype == torch.float16 else 1e-4
    assert cmp.allclose(ref.clone(), ref, tol, tol) == (True, 0.0, 0.0)
    spoiled = [ref * 1.05 if dtype.is_floating_point else ref + 1]  # uniformly off: must fail
    one = ref.clone()
    one[8, 10] += 3  # off in the last chunk only: must fail
    spoiled.append(one)
    if dtype.is_floating_point:
        nan = ref.clone()
        nan[0, 6] = math.nan
        spoiled.append(nan)
    for got in spoiled:
        close, largest, mean = cmp.allclose(got, ref, tol, tol)
        diff = (got.double() - ref.double()).abs()
        assert close is torch.allclose(got, ref, atol=tol, rtol=tol) is False
        assert largest == pytest.approx(float(diff.max()), nan_ok=True)
        assert mean == pytest.approx(float(diff.mean()), nan_ok=True)
    assert cmp.allclose(ref[:0], ref[:0], tol, tol)[0]
