"""Comparing a solution's output with the reference: the verdict, the figures, where it went wrong.

Judge side (uses torch). Every element falls in one of four kinds, counted before any figure:
unwritten (it still holds the harness's poison, `unwritten`), a non-finite mismatch (NaN or Inf
where the reference is finite, or a reference NaN/Inf the output does not repeat,
`nonfinite_mismatches`), a finite value (its error |got - ref|), or the reference's own NaN or
Inf repeated (right, with no magnitude). The first two hold no usable number where one is due:
call them missing. The verdict: an element passes when |got - ref| <= atol + rtol * |ref|, a
missing one never does; the norm-wise relative error ||got - ref||_2 / ||ref||_2 must stay under
the dtype's ceiling (an output wrong everywhere by a small factor fails even when each element is
within atol); PSNR and cosine floors, where set, must hold.

Every figure is over the whole output, so that none can look good while some of it is missing:
- errors (`max_abs_err`, `max_rel_err`, `mean_abs_err`, `mse`, `rmse`, `norm_rel_err`): a missing
  element's error is +inf. It holds no number, so its error is unbounded; inf is that error's
  supremum, not an invented size, and it stays inf through every mean and norm. A finite stand-in
  (say, the element taken as 0) would let one NaN in a million read as a 1e-6 error. A repeated
  NaN or Inf is right but has no magnitude: it is left out of the means (`mean_abs_err`, `mse`
  average over the other elements), as it is out of the norms and the peak.
- `psnr_db`: 10 log10(peak^2 / mse), the peak being the reference's largest finite |value|; -inf
  when anything is missing (mse is inf), +inf for no error, NaN (undefined, so no floor is
  applied: the elements decide, as with a zero reference's norm-wise test) for error against an
  all-zero reference, where +inf would read as perfect.
- `cosine`: <got, ref> / (||got|| ||ref||), where each side's norm counts every finite value it
  holds and the inner product only the elements where both hold one. A missing element adds its
  reference's magnitude to ||ref|| and nothing to the agreement: cosine is then at most the
  fraction of the reference's norm that was delivered (about 0.36 with 87% unwritten). A cosine
  bounded in [-1, 1] has no infinite worst; "no value, no agreement" is the stand-in that keeps
  its meaning. 1 when both sides are all zero, 0 when only one is.
With nothing missing these are the figures over the finite elements, so the verdict of the floors
is what it was. `max_rel_err` divides by max(|ref|, atol): near zero the error is measured
against atol. MAE here is the mean absolute error; the maximum is `max_abs_err`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from rung.common.poison import poisoned_mask
from rung.judge.tolerance import Tolerance

FIRST_MISMATCHES = 5
# Elements compared at once. Compared whole, an output's float64 work buffers (the output, its
# error, the reference's finite values, the bound) come to several times its size: for a 6 GiB
# output (KernelBench's Sigmoid), more than an 80 GB GPU has left beside the inputs.
CHUNK_ELEMENTS = 2**25


@dataclass
class Comparison:
    ok: bool
    message: str
    metrics: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Elements:
    """One output against its reference, element by element, in float64 on the output's device."""

    got: torch.Tensor
    ref: torch.Tensor
    ref_finite: torch.Tensor  # the reference, 0 where it is NaN or Inf
    both: torch.Tensor  # both hold a finite number (the kernel's own, for the output)
    err: torch.Tensor  # |got - ref|; 0 for a repeated NaN/Inf; inf where missing
    bad: torch.Tensor  # outside the tolerance: the verdict's mask
    unwritten: torch.Tensor


def _elements(got: torch.Tensor, ref: torch.Tensor, tol: Tolerance) -> _Elements:
    # On the output's own device: moving a GiB-sized output to the host costs seconds. Masks and
    # in-place fills rather than boolean indexing: no copy of any subset of the elements.
    unwritten = poisoned_mask(got)
    g = got.detach().to(torch.float64)
    r = ref.detach().to(got.device, torch.float64)
    ref_odd = ~torch.isfinite(r)
    both = torch.isfinite(g) & ~ref_odd
    if not got.is_floating_point():  # a float's poison is a NaN, which isfinite already excluded
        both &= ~unwritten
    # the reference's NaN or Inf repeated is right (error 0); poison never repeats a NaN
    repeated = ((g == r) | (torch.isnan(g) & torch.isnan(r))) & ~unwritten
    err = (g - r).abs_().masked_fill_(~both, math.inf).masked_fill_(repeated, 0.0)
    ref_finite = r.masked_fill(ref_odd, 0.0)
    bound = ref_finite.abs().mul_(tol.rtol).add_(tol.atol)
    return _Elements(g, r, ref_finite, both, err, err > bound, unwritten)


def compare(got: torch.Tensor, ref: torch.Tensor, tol: Tolerance, figures: bool = True) -> Comparison:
    """Element-wise check of `got` against `ref` (same shape) under `tol`, with error figures.

    `figures=False` gives the same verdict and computes only what decides it (the mismatch count
    and the norm-wise error); the error figures and the first mismatches come only on a failure.
    The timed calls' checks use it: a full set of figures per output is most of their cost."""
    n = got.numel()
    # one pass over the elements where the figures are wanted anyway, else the verdict's alone
    full = _figures(got, ref, tol) if figures and n else None
    mism, err_norm, ref_norm = full[0] if full else _verdict(got, ref, tol)
    m: dict[str, Any] = {"elements": n, "mismatches": int(mism)}
    m["norm_rel_err"] = _ratio(err_norm, ref_norm)
    decided_by_count = not (tol.min_psnr_db or tol.min_cosine)
    if not figures and not mism and decided_by_count and not _norm_fails(tol, ref_norm, m["norm_rel_err"]):
        return Comparison(True, f"{n} elements within {tol.describe()}", m)
    if n:
        found = (full or _figures(got, ref, tol))[1]
        first = found.pop("first_mismatches")
        m.update(found)
        if mism:
            m["first_mismatches"] = first
    problems = []
    if mism:
        problems.append(_mismatch_message(m, tol))
    if tol.min_psnr_db and m.get("psnr_db", math.inf) < tol.min_psnr_db:
        problems.append(f"PSNR {m['psnr_db']:.1f} dB below {tol.min_psnr_db:g} dB")
    if tol.min_cosine and m.get("cosine", 1.0) < tol.min_cosine:
        problems.append(f"cosine similarity {m['cosine']:.6f} below {tol.min_cosine:g}")
    # with elements missing the ratio is inf by definition, and they already fail the output
    nothing_missing = not (m.get("unwritten") or m.get("nonfinite_mismatches"))
    if nothing_missing and _norm_fails(tol, ref_norm, m["norm_rel_err"]):
        problems.append(
            f"norm-wise relative error {m['norm_rel_err']:.1e} > {_sci(tol.max_norm_rel_err)}"
            f"{' for ' + tol.dtype if tol.dtype else ''}: the whole output is off, not a few elements"
        )
    if problems:
        return Comparison(False, "; ".join(problems), m)
    return Comparison(True, f"{n} elements within {tol.describe()}", m)


def _verdict(got: torch.Tensor, ref: torch.Tensor, tol: Tolerance) -> tuple[float, float, float]:
    """What decides the verdict, chunk by chunk in one sync: the mismatch count, ||err||, ||ref||."""
    counted, err_sq, ref_sq = [], [], []
    for _, g, r in chunks(got, ref):
        e = _elements(g, r, tol)
        counted.append(e.bad.sum())
        err_sq.append(_norm(e.err) ** 2)
        ref_sq.append(_norm(e.ref_finite) ** 2)
    mism, err_norm, ref_norm = _host(_total(counted), _total(err_sq).sqrt(), _total(ref_sq).sqrt())
    return mism, err_norm, ref_norm


def _figures(
    got: torch.Tensor, ref: torch.Tensor, tol: Tolerance
) -> tuple[tuple[float, float, float], dict[str, Any]]:
    """What `_verdict` gives, and the counts and the error figures over the whole output (module
    docstring) with the first FIRST_MISMATCHES mismatches and their indices in the output: one
    pass, chunk by chunk, in one sync."""
    floor = max(tol.atol, 1e-12)  # relative error of a near-zero reference is measured against atol
    sums: list[list[torch.Tensor]] = [[] for _ in range(11)]
    maxes: list[list[torch.Tensor]] = [[] for _ in range(3)]
    found: list[dict[str, Any]] = []
    for start, g, r in chunks(got, ref):
        e = _elements(g, r, tol)
        ref_abs = e.ref_finite.abs()
        missing = ~e.both & (e.err > 0)  # off `both`, err is inf where missing and 0 where repeated
        got_finite = e.got.masked_fill(~torch.isfinite(e.got) | e.unwritten, 0.0)
        for acc, part in zip(
            sums,
            (
                e.unwritten.sum(),
                missing.sum(),
                (missing & ~e.unwritten & torch.isfinite(e.ref)).sum(),
                e.bad.sum(),
                e.both.sum(),
                e.err.sum(),
                (e.err * e.err).sum(),
                (got_finite * e.ref_finite).sum(),  # nonzero only where both hold a number
                _norm(got_finite) ** 2,
                _norm(e.ref_finite) ** 2,
                _norm(e.err) ** 2,  # as `_verdict` sums it, so both give the same norm-wise error
            ),
            strict=True,
        ):
            acc.append(part.to(torch.float64))
        for acc, part in zip(
            maxes, (e.err.max(), (e.err / ref_abs.clamp_min(floor)).max(), ref_abs.max()), strict=True
        ):
            acc.append(part)
        if len(found) < FIRST_MISMATCHES:
            found += _first_mismatches(e, start, got.shape, FIRST_MISMATCHES - len(found))
    (
        unwritten,
        n_missing,
        nonfinite_got,
        bad,
        n_both,
        abs_sum,
        sq_sum,
        dot,
        gn_sq,
        rn_sq,
        err_sq,
        max_abs,
        max_rel,
        peak,
    ) = _host(*(_total(a) for a in sums), *(torch.stack(a).max() for a in maxes))
    gn, rn = math.sqrt(gn_sq), math.sqrt(rn_sq)
    averaged = n_both + n_missing  # all but the repeated NaN/Inf, which have no magnitude
    mse = sq_sum / averaged if averaged else 0.0
    figures: dict[str, Any] = {
        "unwritten": int(unwritten),
        "unwritten_pct": 100.0 * unwritten / got.numel(),
        "nonfinite_mismatches": int(n_missing - unwritten),
        "nonfinite_where_ref_finite": int(nonfinite_got),
        "out_of_tolerance": int(bad - n_missing),
        "mean_abs_err": abs_sum / averaged if averaged else 0.0,
        "max_abs_err": max_abs,
        "max_rel_err": max_rel,
        "mse": mse,
        "rmse": math.sqrt(mse),
        "psnr_db": _psnr_db(peak, mse),
        "cosine": dot / (gn * rn) if gn and rn else float(gn == rn),
        "first_mismatches": found,
    }
    return (bad, math.sqrt(err_sq), rn), figures


def _psnr_db(peak: float, mse: float) -> float:
    if math.isinf(mse):
        return -math.inf
    if mse == 0:
        return math.inf
    if peak == 0:
        return math.nan  # noise against no signal: undefined, and no floor applies
    return 10 * math.log10(peak**2 / mse)


def _first_mismatches(e: _Elements, start: int, shape: torch.Size, most: int) -> list[dict[str, Any]]:
    """Up to `most` mismatches of a chunk that begins at flat index `start` of an output of
    `shape`, each with its index in the output."""
    flat = e.bad.nonzero().flatten()[:most].tolist()
    return [
        {
            "index": [int(i) for i in np.unravel_index(start + k, tuple(shape))],
            "got": _num(e.got[k]),
            "expected": _num(e.ref[k]),
        }
        for k in flat
    ]


def _mismatch_message(m: dict[str, Any], tol: Tolerance) -> str:
    """The counts first (how much never written, what is NaN or Inf, what is off), then where."""
    n, mism = m["elements"], m["mismatches"]
    said = f"{mism} of {n} elements outside {tol.describe()}"
    kinds = []
    if m["unwritten"]:
        kinds.append(f"{m['unwritten']} never written (still the poison the harness filled in)")
    if m["nonfinite_where_ref_finite"]:
        kinds.append(f"{m['nonfinite_where_ref_finite']} NaN or Inf where the reference is finite")
    other = m["nonfinite_mismatches"] - m["nonfinite_where_ref_finite"]
    if other:
        kinds.append(f"{other} not repeating the reference's NaN or Inf")
    if kinds:
        said += ": " + ", ".join([*kinds, f"{m['out_of_tolerance']} finite values off"])
    if m["unwritten"]:
        said = f"{m['unwritten_pct']:.3g}% of the output never written; {said}"
    where = ", ".join(
        f"{tuple(x['index'])}: got {x['got']:.6g} expected {x['expected']:.6g}"
        for x in m["first_mismatches"][:3]
    )
    return f"{said}; first at {where}"


def allclose(got: torch.Tensor, ref: torch.Tensor, atol: float, rtol: float) -> tuple[bool, float, float]:
    """`torch.allclose(got, ref, rtol, atol)`'s verdict (as a problem's own check has it) and,
    where it is False, the largest and the mean |got - ref| in float64; chunk by chunk, so that
    no temporary the size of the output is made (whole, allclose's and the figures' come to
    several times a 6 GiB output)."""
    if not got.numel():
        return True, 0.0, 0.0
    parts = list(chunks(got, ref))
    close = torch.stack([torch.isclose(g, r.to(g.device), rtol=rtol, atol=atol).all() for _, g, r in parts])
    if bool(close.all()):
        return True, 0.0, 0.0
    peak, total = [], []
    for _, g, r in parts:
        diff = (g.to(torch.float64) - r.to(g.device, torch.float64)).abs_()
        peak.append(diff.max())
        total.append(diff.sum())
    largest, summed = _host(torch.stack(peak).max(), _total(total))
    return False, largest, summed / got.numel()


def chunks(got: torch.Tensor, ref: torch.Tensor) -> Iterator[tuple[int, torch.Tensor, torch.Tensor]]:
    """The output and its reference, flattened, CHUNK_ELEMENTS at a time with where each begins:
    the float64 work of a comparison is a few times the size of what it compares at once."""
    g, r = got.detach().reshape(-1), ref.detach().reshape(-1)
    for start in range(0, max(g.numel(), 1), CHUNK_ELEMENTS):
        yield start, g[start : start + CHUNK_ELEMENTS], r[start : start + CHUNK_ELEMENTS]


def _total(parts: list[torch.Tensor]) -> torch.Tensor:
    return torch.stack([p.to(torch.float64) for p in parts]).sum()


def _host(*scalars: torch.Tensor) -> list[float]:
    """Device scalars to Python floats in one transfer (one sync, not one per figure)."""
    return torch.stack([s.to(torch.float64) for s in scalars]).tolist()


def _norm(t: torch.Tensor) -> torch.Tensor:
    return torch.linalg.vector_norm(t) if t.numel() else torch.zeros((), dtype=t.dtype, device=t.device)


def _ratio(err_norm: float, ref_norm: float) -> float:
    """||err|| / ||ref||; a zero reference gives 0 where there is no error, else inf (the norm-wise
    test then stands aside)."""
    if ref_norm > 0:
        return err_norm / ref_norm
    return 0.0 if err_norm == 0 else math.inf


def _norm_fails(tol: Tolerance, ref_norm: float, norm_rel_err: float) -> bool:
    return bool(tol.max_norm_rel_err) and ref_norm > 0 and norm_rel_err > tol.max_norm_rel_err


def _sci(x: float) -> str:
    return f"{x:.1e}".replace(".0e", "e")


def _num(x: torch.Tensor) -> float:
    return float(x.item())
