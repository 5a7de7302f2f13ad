from __future__ import annotations

import pytest

from rung.judge.tolerance import Tolerance


def test_defaults_follow_the_output_dtype():
    assert Tolerance.for_dtype("torch.float32") == Tolerance(1e-5, 1e-5)
    assert Tolerance.for_dtype("float16").atol == 1e-3
    assert Tolerance.for_dtype("bfloat16").rtol == 1e-2
    assert Tolerance.for_dtype("int32") == Tolerance(0.0, 0.0)


def test_a_problem_overrides_single_keys():
    t = Tolerance.for_dtype("float32", {"atol": 1e-3, "min_cosine": 0.999})
    assert (t.atol, t.rtol, t.min_cosine) == (1e-3, 1e-5, 0.999)


def test_unknown_keys_are_refused():
    with pytest.raises(ValueError, match="unknown tolerance key 'atl'"):
        Tolerance.for_dtype("float32", {"atl": 1.0})
