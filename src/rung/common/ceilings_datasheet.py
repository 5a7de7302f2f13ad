"""Vendor datasheet peaks per GPU model (dense: no structured sparsity), matched by the name NVML
and CUDA give the card: the physical limit the roofline rung holds every timing to, and what
`rung device` shows beside the measured ceilings. Pure data and one lookup.

Where a datasheet gives a range or several figures, the highest is kept: these are limits no
honest kernel may beat, so a figure too high only loosens the check, one too low would FAIL an
honest kernel. Sources (NVIDIA's public datasheets and architecture whitepapers, read 2026-12):
H100 and H100 NVL: "NVIDIA H100 Tensor Core GPU" datasheet (SXM, PCIe, NVL columns); H200: "NVIDIA
H200 Tensor Core GPU" datasheet (SXM, NVL); GH200: "NVIDIA GH200 Grace Hopper Superchip"
datasheet (HBM3e, 4.9 TB/s, the higher of its two memories); B200: "NVIDIA HGX B200" datasheet
(per GPU: the eight-GPU figures over eight); A100: "NVIDIA A100 Tensor Core GPU" datasheet (40 and
80 GB, SXM and PCIe); L40S, L4: their product datasheets; RTX 4090: "NVIDIA Ada GPU Architecture"
whitepaper, appendix (fp16 with fp16 accumulate, the faster of its two accumulations); RTX 5090:
"NVIDIA RTX Blackwell GPU Architecture" whitepaper.
"""

from __future__ import annotations

from typing import Any


def _sheet(dram_gbps: float, half_tflops: float, tf32_tflops: float, fp32_tflops: float) -> dict[str, float]:
    return {
        "dram_gbps": dram_gbps,
        "bf16_tensor_tflops": half_tflops,
        "fp16_tensor_tflops": half_tflops,
        "tf32_tensor_tflops": tf32_tflops,
        "fp32_vector_tflops": fp32_tflops,
    }


_H100_SXM = _sheet(3350.0, 989.5, 494.7, 67.0)
_A100 = (312.0, 156.0, 19.5)

# Keys are NVML's names; a name not listed matches the longest key it starts with (then a space
# or a dash), so a variant of a family gets the family's fastest member.
DATASHEET: dict[str, dict[str, float]] = {
    "NVIDIA H100": _H100_SXM,
    "NVIDIA H100 80GB HBM3": _H100_SXM,
    "NVIDIA H100 PCIe": _sheet(2000.0, 756.5, 378.0, 51.0),
    "NVIDIA H100 NVL": _sheet(3900.0, 835.5, 417.5, 60.0),
    "NVIDIA H200": _sheet(4800.0, 989.0, 494.0, 67.0),
    "NVIDIA H200 NVL": _sheet(4800.0, 835.5, 417.5, 60.0),
    "NVIDIA GH200": _sheet(4900.0, 989.5, 494.7, 67.0),
    "NVIDIA B200": _sheet(8000.0, 2250.0, 1125.0, 75.0),
    "NVIDIA A100": _sheet(2039.0, *_A100),
    "NVIDIA A100-SXM4-80GB": _sheet(2039.0, *_A100),
    "NVIDIA A100-SXM4-40GB": _sheet(1555.0, *_A100),
    "NVIDIA A100 80GB PCIe": _sheet(1935.0, *_A100),
    "NVIDIA A100-PCIE-40GB": _sheet(1555.0, *_A100),
    "NVIDIA L40S": _sheet(864.0, 362.05, 183.0, 91.6),
    "NVIDIA L4": _sheet(300.0, 121.0, 60.0, 30.3),
    "NVIDIA GeForce RTX 4090": {**_sheet(1008.0, 330.3, 82.6, 82.6), "bf16_tensor_tflops": 165.2},
    "NVIDIA GeForce RTX 5090": _sheet(1792.0, 419.0, 104.8, 104.8),
}


def datasheet(name: str) -> dict[str, Any] | None:
    """The datasheet peaks for a GPU named `name` (NVML's name), or None where rung knows none."""
    if name in DATASHEET:
        return DATASHEET[name]
    matches = [k for k in DATASHEET if name.startswith((f"{k} ", f"{k}-"))]
    return DATASHEET[max(matches, key=len)] if matches else None
