from __future__ import annotations

import pytest

from rung.judge.tolerance import Tolerance


def test_defaults_follow_the_output_dtype():
    assert Tolerance.for_dtype("torch.float32") == Tolerance(
        1e-5, 1e-5, max_norm_rel_err=1e-4, dtype="float32"
    )
    assert Tolerance.for_dtype("float16").atol == 1e-3
    assert Tolerance.for_dtype("bfloat16").rtol == 1e-2
    assert Tolerance.for_dtype("int32") == Tolerance(0.0, 0.0, dtype="int32")


@pytest.mark.parametrize(
    ("dtype", "unit_roundoff"),
    [("float64", 2.0**-53), ("float32", 2.0**-24), ("float16", 2.0**-11), ("bfloat16", 2.0**-8)],
)
def test_the_norm_wise_ceiling_sits_between_rounding_and_a_one_percent_scale(dtype, unit_roundoff):
    """Above the rtol (an output within rtol everywhere cannot fail it), above several times the
    dtype's own rounding, and (but for bfloat16, whose rtol is 1e-2) under an error of 1%."""
    t = Tolerance.for_dtype(dtype)
    assert t.max_norm_rel_err >= t.rtol and t.max_norm_rel_err >= 5 * unit_roundoff
    assert t.max_norm_rel_err < 1e-2 or dtype == "bfloat16"


def test_a_problem_overrides_single_keys():
    t = Tolerance.for_dtype("float32", {"atol": 1e-3, "min_cosine": 0.999, "max_norm_rel_err": 1e-3})
    assert (t.atol, t.rtol, t.min_cosine, t.max_norm_rel_err) == (1e-3, 1e-5, 0.999, 1e-3)


def test_unknown_keys_are_refused():
    with pytest.raises(ValueError, match="unknown tolerance key 'atl'"):
        Tolerance.for_dtype("float32", {"atl": 1.0})
