"""Comparing a solution's output with the reference: the figures, and where it went wrong.

Judge side (uses torch). NaN and Inf are handled explicitly: a non-finite value matches only the
same non-finite value in the reference. Elements that still hold the harness's poison pattern
are counted as not written. Beside the element-wise test, the norm-wise relative error of the
finite elements, ||got - ref||_2 / ||ref||_2 in float64, must stay under the dtype's ceiling: an
output wrong everywhere by a small factor fails even when each element is within atol.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import torch

from rung.common.poison import poisoned_mask
from rung.judge.tolerance import Tolerance

FIRST_MISMATCHES = 5


@dataclass
class Comparison:
    ok: bool
    message: str
    metrics: dict[str, Any] = field(default_factory=dict)


def compare(got: torch.Tensor, ref: torch.Tensor, tol: Tolerance, figures: bool = True) -> Comparison:
    """Element-wise check of `got` against `ref` (same shape) under `tol`, with error figures.

    `figures=False` gives the same verdict and computes only what decides it (the mismatch count
    and the norm-wise error); the error figures and the first mismatches come only on a failure.
    The timed calls' checks use it: a full set of figures per output is most of their cost."""
    unwritten = poisoned_mask(got)
    # On the output's own device: moving a GiB-sized output to the host costs seconds. Masks
    # (where) rather than boolean indexing: no copy of the finite elements, no sync per figure.
    g = got.detach().to(torch.float64)
    r = ref.detach().to(got.device, torch.float64)
    both_finite = torch.isfinite(g) & torch.isfinite(r)
    same_special = (torch.isnan(g) & torch.isnan(r)) | (torch.isinf(g) & torch.isinf(r) & (g == r))
    diff = torch.where(both_finite, (g - r).abs(), torch.zeros_like(g))
    bound = tol.atol + tol.rtol * r.abs()
    bad = ~same_special & ~(both_finite & (diff <= bound))
    bad |= unwritten

    n = g.numel()
    mism = int(bad.sum())
    m: dict[str, Any] = {"elements": n, "mismatches": mism}
    fr = torch.where(both_finite, r, torch.zeros_like(r))
    ref_norm, m["norm_rel_err"] = _norm_rel_err(diff, fr) if n else (0.0, 0.0)
    decided_by_count = not (tol.min_psnr_db or tol.min_cosine)
    if not figures and not mism and decided_by_count and not _norm_fails(tol, ref_norm, m["norm_rel_err"]):
        return Comparison(True, f"{n} elements within {tol.describe()}", m)
    if n:
        finite = int(both_finite.sum())
        fg = torch.where(both_finite, g, torch.zeros_like(g))
        m["max_abs_err"] = float(diff.max())
        floor = max(tol.atol, 1e-12)  # relative error of a near-zero reference is measured against atol
        m["max_rel_err"] = float((diff / fr.abs().clamp_min(floor)).max())
        mse = float((diff**2).sum()) / finite if finite else 0.0
        m["mse"], m["rmse"] = mse, math.sqrt(mse)
        peak = float(fr.abs().max())
        m["psnr_db"] = 10 * math.log10(peak**2 / mse) if mse > 0 and peak > 0 else math.inf
        den = float(fg.norm() * fr.norm())
        m["cosine"] = float((fg * fr).sum()) / den if den > 0 else float(torch.equal(fg, fr))
        m["got_nonfinite"] = int((~torch.isfinite(g)).sum())
        m["ref_nonfinite"] = int((~torch.isfinite(r)).sum())
        m["unwritten"] = int(unwritten.sum())

    problems = []
    if mism:
        idx = bad.nonzero()[:FIRST_MISMATCHES]
        m["first_mismatches"] = [
            {"index": [int(i) for i in ix], "got": _num(g[tuple(ix)]), "expected": _num(r[tuple(ix)])}
            for ix in idx.tolist()
        ]
        where = ", ".join(
            f"{tuple(x['index'])}: got {x['got']:.6g} expected {x['expected']:.6g}"
            for x in m["first_mismatches"][:3]
        )
        what = f"{mism} of {n} elements outside {tol.describe()}"
        if m.get("unwritten"):
            what += f" ({m['unwritten']} never written: still the poison the harness filled in)"
        problems.append(f"{what}; first at {where}")
    if tol.min_psnr_db and m.get("psnr_db", math.inf) < tol.min_psnr_db:
        problems.append(f"PSNR {m['psnr_db']:.1f} dB below {tol.min_psnr_db:g} dB")
    if tol.min_cosine and m.get("cosine", 1.0) < tol.min_cosine:
        problems.append(f"cosine similarity {m['cosine']:.6f} below {tol.min_cosine:g}")
    if _norm_fails(tol, ref_norm, m["norm_rel_err"]):
        problems.append(
            f"norm-wise relative error {m['norm_rel_err']:.1e} > {_sci(tol.max_norm_rel_err)}"
            f"{' for ' + tol.dtype if tol.dtype else ''}: the whole output is off, not a few elements"
        )
    if problems:
        return Comparison(False, "; ".join(problems), m)
    return Comparison(True, f"{n} elements within {tol.describe()}", m)


def _norm_rel_err(diff: torch.Tensor, ref: torch.Tensor) -> tuple[float, float]:
    """(||ref||_2, ||diff||_2 / ||ref||_2) of finite float64 tensors; a zero reference gives a
    ratio of 0 where there is no error, else inf (the caller then skips the test)."""
    diff_norm, ref_norm = float(torch.linalg.vector_norm(diff)), float(torch.linalg.vector_norm(ref))
    if ref_norm > 0:
        return ref_norm, diff_norm / ref_norm
    return 0.0, 0.0 if diff_norm == 0 else math.inf


def _norm_fails(tol: Tolerance, ref_norm: float, norm_rel_err: float) -> bool:
    return bool(tol.max_norm_rel_err) and ref_norm > 0 and norm_rel_err > tol.max_norm_rel_err


def _sci(x: float) -> str:
    return f"{x:.1e}".replace(".0e", "e")


def _num(x: torch.Tensor) -> float:
    return float(x.item())
