"""The default correctness policy per output dtype, and how a problem overrides it.

An element passes when |got - ref| <= atol + rtol * |ref| (ref computed in float64 where the
problem allows). Floors on PSNR and cosine similarity, where set, must hold for the whole output.
Integer and boolean outputs must match exactly. A problem's TOLERANCE dict replaces any key here.
"""

from __future__ import annotations

from dataclasses import dataclass

# dtype name -> (atol, rtol, min_psnr_db, min_cosine); floors of 0 are not checked.
DEFAULTS: dict[str, tuple[float, float, float, float]] = {
    "float64": (1e-10, 1e-10, 0.0, 0.0),
    "float32": (1e-5, 1e-5, 0.0, 0.0),
    "float16": (1e-3, 1e-3, 0.0, 0.0),
    "bfloat16": (1e-2, 1e-2, 0.0, 0.0),
    "float8_e4m3fn": (1e-1, 1.25e-1, 20.0, 0.99),
    "float8_e5m2": (2e-1, 2.5e-1, 15.0, 0.98),
}
EXACT = (0.0, 0.0, 0.0, 0.0)
KEYS = ("atol", "rtol", "min_psnr_db", "min_cosine")


@dataclass(frozen=True)
class Tolerance:
    atol: float
    rtol: float
    min_psnr_db: float = 0.0
    min_cosine: float = 0.0

    @classmethod
    def for_dtype(cls, dtype_name: str, override: dict[str, float] | None = None) -> Tolerance:
        """The policy for an output of `dtype_name` ("float32", "torch.float16", ...)."""
        name = dtype_name.removeprefix("torch.")
        values = dict(zip(KEYS, DEFAULTS.get(name, EXACT), strict=False))
        for key, value in (override or {}).items():
            if key not in KEYS:
                raise ValueError(f"unknown tolerance key {key!r} (known: {', '.join(KEYS)})")
            values[key] = float(value)
        return cls(**values)

    def describe(self) -> str:
        parts = [f"atol={self.atol:g}", f"rtol={self.rtol:g}"]
        if self.min_psnr_db:
            parts.append(f"psnr>={self.min_psnr_db:g}dB")
        if self.min_cosine:
            parts.append(f"cos>={self.min_cosine:g}")
        return " ".join(parts)
