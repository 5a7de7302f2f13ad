"""Nsight Compute on the command line: how rung runs it, and where its Python module lives.

rung runs `ncu --set full --import-source yes` with `--clock-control none` (clocks as they are:
never changed) on only the kernels inside one NVTX range, the solution's call, and has ncu write
its report (`.ncu-rep`, kept for ncu-ui) and its own output to a log file, so nothing the
profiled program prints can pass for a figure. The report is read with `ncu_report`, the Python
module that ships with Nsight Compute (`extras/python` of its install folder), by the judge
(`rung.judge.ncu_export`), never through the console's CSV.
"""

from __future__ import annotations

import glob
import shutil
from pathlib import Path

NVTX_RANGE = "rung::profile"
# Where Nsight Compute installs: its own installer, and inside a CUDA toolkit. The `ncu` on PATH
# may be the toolkit's wrapper script (/usr/local/cuda/bin/ncu), whose folder holds no module.
INSTALL_GLOBS = ("/opt/nvidia/nsight-compute/*", "/usr/local/cuda*/nsight-compute*")


def find() -> str | None:
    """The ncu executable: on PATH, else where the CUDA toolkit puts it."""
    return shutil.which("ncu") or shutil.which("ncu", path="/usr/local/cuda/bin")


def command(exe: str, report: Path, log: Path, target: list[str]) -> list[str]:
    """ncu writing the full set of sections, with the kernels' source, to `report` (.ncu-rep)."""
    return [
        exe,
        "--clock-control",
        "none",
        "--set",
        "full",
        "--import-source",
        "yes",
        "--nvtx",
        "--nvtx-include",
        f"{NVTX_RANGE}/",
        "--force-overwrite",
        "--export",
        str(report),
        "--log-file",
        str(log),
        *target,
    ]


def python_module_dirs(exe: str | None) -> list[Path]:
    """Folders holding `ncu_report.py`, the one beside the executable first (its report format),
    then every install found, newest first."""
    roots: list[Path] = []
    if exe:
        roots.append(Path(exe).resolve().parent)
    roots += [Path(p) for p in sorted(glob.glob(INSTALL_GLOBS[0]), reverse=True)]
    roots += [Path(p) for p in sorted(glob.glob(INSTALL_GLOBS[1]), reverse=True)]
    found = [r / "extras" / "python" for r in roots if (r / "extras" / "python" / "ncu_report.py").is_file()]
    return list(dict.fromkeys(found))
