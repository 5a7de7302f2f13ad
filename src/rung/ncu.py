"""Nsight Compute on the command line: the metrics rung asks for and how its CSV reads back.

rung runs `ncu --csv --page raw --print-units base --metrics ...` with `--clock-control none`
(clocks as they are: never changed) and only the kernels inside one NVTX range, writing ncu's
own output to a log file so that nothing the profiled program prints can pass for a figure.
The raw page is a header row (`Kernel Name`, then one column per metric), a units row, then one
row per profiled launch.
"""

from __future__ import annotations

import csv
import io
import shutil
from pathlib import Path

NVTX_RANGE = "rung::profile"

# name in rung's figures -> ncu metric (the Speed Of Light section's headline counters and a few more)
METRICS = {
    "duration_ns": "gpu__time_duration.sum",
    "sm_pct": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "memory_pct": "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "dram_pct": "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    "dram_read_bytes": "dram__bytes_read.sum",
    "dram_write_bytes": "dram__bytes_write.sum",
    "l2_hit_pct": "lts__t_sector_hit_rate.pct",
    "occupancy_pct": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "registers": "launch__registers_per_thread",
    "grid": "launch__grid_size",
    "block": "launch__block_size",
}


def find() -> str | None:
    """The ncu executable: on PATH, else where the CUDA toolkit puts it."""
    return shutil.which("ncu") or shutil.which("ncu", path="/usr/local/cuda/bin")


def command(exe: str, log: Path, target: list[str]) -> list[str]:
    return [
        exe,
        "--clock-control",
        "none",
        "--nvtx",
        "--nvtx-include",
        f"{NVTX_RANGE}/",
        "--metrics",
        ",".join(METRICS.values()),
        "--csv",
        "--page",
        "raw",
        "--print-units",
        "base",
        "--log-file",
        str(log),
        *target,
    ]


def parse(text: str) -> list[dict[str, float | str | None]]:
    """One dict per profiled launch: `kernel` and each of METRICS as a number (None where ncu
    printed none). Lines before the header (ncu's `==PROF==` notes) are skipped."""
    rows = [r for r in csv.reader(io.StringIO(text)) if r]
    at = next((i for i, r in enumerate(rows) if "Kernel Name" in r and METRICS["duration_ns"] in r), None)
    if at is None:
        return []
    header = rows[at]
    launches: list[dict[str, float | str | None]] = []
    for row in rows[at + 2 :]:  # past the units row
        if len(row) != len(header):
            continue
        cells = dict(zip(header, row, strict=True))
        launch: dict[str, float | str | None] = {"kernel": cells["Kernel Name"]}
        for name, metric in METRICS.items():
            launch[name] = _number(cells.get(metric, ""))
        launches.append(launch)
    return launches


def _number(cell: str) -> float | None:
    try:
        return float(cell.replace(",", ""))
    except ValueError:
        return None
