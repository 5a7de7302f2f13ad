"""The default correctness policy per output dtype, and how a problem overrides it.

An element passes when |got - ref| <= atol + rtol * |ref| (ref computed in float64 where the
problem allows). Floors on PSNR and cosine similarity, where set, must hold for the whole output,
and so must a ceiling on the norm-wise relative error ||got - ref||_2 / ||ref||_2: it fails an
output wrong everywhere by a small factor whose elements all sit under atol (a softmax scaled by
1.01). Integer and boolean outputs must match exactly. A problem's TOLERANCE dict replaces any key.
"""

from __future__ import annotations

from dataclasses import dataclass

# dtype name -> (atol, rtol, min_psnr_db, min_cosine, max_norm_rel_err); 0 is not checked.
#
# max_norm_rel_err, against u, the dtype's unit roundoff. Rounding a float64 value to the dtype
# alone gives a norm-wise error of about 0.42 u (measured on randn and softmax rows: fp32 2.5e-8,
# fp16 2.1e-4, bf16 1.7e-3, e4m3 2.7e-2, e5m2 5.3e-2). A reduction of n terms summed in another
# order adds about sqrt(n) u typically, n u at worst.
# - float64 (u = 1.1e-16): 1e-10, its rtol; sqrt(n) u stays under 1e-12 for n up to 1e8.
# - float32 (u = 6.0e-8): 1e-4, about 1700 u; the errors are the accumulations'. Shipped
#   solutions measured on the CPU: 2e-8 to 4e-7. The fp16 matmul on an H200 (wgmma, fp32
#   accumulators) erred by up to 5.7e-3 at K = 8192 (`git show 1fb40c7:docs/results/2026-12-03/NOTES.md`) on values
#   of rms 90: a norm-wise error of 6.3e-5 at most; an fp32 accumulator that truncates at each 16-wide K step,
#   emulated, gives that max error (5.5e-3) at a norm-wise 1.3e-5, 8x under the ceiling. An
#   output rounded through fp16 (2.1e-4) or scaled by 1.001 fails.
# - float16 (u = 4.9e-4): 5e-3, about 10 u: 24x the output's own rounding, room for a few fp16
#   intermediates; a 1.01 scale fails.
# - bfloat16 (u = 3.9e-3): 2e-2, about 5 u: 12x the output's own rounding.
# - float8 (u = 6.25e-2, 1.25e-1): 10^(-psnr floor / 20), 0.1 and 0.18: as the reference's RMS is
#   at most its peak, an output within them meets the PSNR floor too; 3.7x and 3.4x the output's
#   own rounding.
# The ceiling has no absolute floor: an output small only by cancellation (a sum of many terms
# near 0, as a single scalar) is judged relatively; such a problem sets its own, or 0 (off).
DEFAULTS: dict[str, tuple[float, float, float, float, float]] = {
    "float64": (1e-10, 1e-10, 0.0, 0.0, 1e-10),
    "float32": (1e-5, 1e-5, 0.0, 0.0, 1e-4),
    "float16": (1e-3, 1e-3, 0.0, 0.0, 5e-3),
    "bfloat16": (1e-2, 1e-2, 0.0, 0.0, 2e-2),
    "float8_e4m3fn": (1e-1, 1.25e-1, 20.0, 0.99, 1e-1),
    "float8_e5m2": (2e-1, 2.5e-1, 15.0, 0.98, 1.8e-1),
}
EXACT = (0.0, 0.0, 0.0, 0.0, 0.0)
KEYS = ("atol", "rtol", "min_psnr_db", "min_cosine", "max_norm_rel_err")


@dataclass(frozen=True)
class Tolerance:
    atol: float
    rtol: float
    min_psnr_db: float = 0.0
    min_cosine: float = 0.0
    max_norm_rel_err: float = 0.0
    dtype: str = ""  # the output dtype the policy is for, named in messages

    @classmethod
    def for_dtype(cls, dtype_name: str, override: dict[str, float] | None = None) -> Tolerance:
        """The policy for an output of `dtype_name` ("float32", "torch.float16", ...)."""
        name = dtype_name.removeprefix("torch.")
        values = dict(zip(KEYS, DEFAULTS.get(name, EXACT), strict=True))
        for key, value in (override or {}).items():
            if key not in KEYS:
                raise ValueError(f"unknown tolerance key {key!r} (known: {', '.join(KEYS)})")
            values[key] = float(value)
        return cls(**values, dtype=name)

    def describe(self) -> str:
        """The element-wise bound and the floors (the norm-wise ceiling has its own message)."""
        parts = [f"atol={self.atol:g}", f"rtol={self.rtol:g}"]
        if self.min_psnr_db:
            parts.append(f"psnr>={self.min_psnr_db:g}dB")
        if self.min_cosine:
            parts.append(f"cos>={self.min_cosine:g}")
        return " ".join(parts)
