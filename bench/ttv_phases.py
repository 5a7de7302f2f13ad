"""Where a cold `rung check` spends its wall time: each start-up phase timed as its own process.

The time to verdict that GPU MODE's eval.py is compared with is the wall time of one `rung check`
in a new process. Its rungs' seconds add up to less than that; this script times what surrounds
them, each phase in a fresh process so that the differences are the phase's own cost:

  python        an empty interpreter
  torch_cuda    `import torch`, then the first CUDA tensor (context creation)
  controller    `rung --version`: the controller's imports
  device_cold   `rung device --json` with an empty cache: a judge, CUDA, the ceilings measured
  device_warm   the same with the ceilings cached: a judge and CUDA only
  problem       `rung problem P --json`: a judge loading the problem (ceilings cached)
  check_cold    `rung check P S --json` with that cache but a new workspace, twice: its wall
                time, the rungs' sum, and the remainder (judge and solution process start-up,
                store, output)

    python3 bench/ttv_phases.py --problem problems/vector_add --solution solutions/correct/tuned.py \
        --out results/ttv_phases.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TORCH_CUDA = (
    "import time; t = time.perf_counter(); import torch; a = time.perf_counter(); "
    "torch.zeros(1, device='cuda'); torch.cuda.synchronize(); "
    "print(a - t, time.perf_counter() - a)"
)


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    began = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False, timeout=600)
    return time.perf_counter() - began, done


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--problem", default="problems/vector_add")
    ap.add_argument("--solution", default="solutions/correct/tuned.py", help="relative to the problem")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="rung-phases-"))
    env = {**os.environ, "RUNG_CACHE_DIR": str(root / "cache"), "RUNG_WORKSPACE": str(root / "ws0")}
    rung = [sys.executable, "-m", "rung"]
    phases: dict[str, Any] = {}
    phases["python"], _ = timed([sys.executable, "-c", "pass"], env)
    wall, done = timed([sys.executable, "-c", TORCH_CUDA], env)
    imports, cuda = (float(x) for x in done.stdout.split()) if done.returncode == 0 else (None, None)
    phases["torch_cuda"] = {"wall": wall, "import_torch": imports, "first_cuda_tensor": cuda}
    phases["controller"], _ = timed([*rung, "--version"], env)
    phases["device_cold"], _ = timed([*rung, "device", "--json"], env)
    phases["device_warm"], _ = timed([*rung, "device", "--json"], env)
    phases["problem"], _ = timed([*rung, "problem", args.problem, "--json"], env)
    checks = []
    for i in (1, 2):
        wall, done = timed(
            [*rung, "check", args.problem, str(Path(args.problem) / args.solution), "--json"],
            {**env, "RUNG_WORKSPACE": str(root / f"ws{i}")},
        )
        try:
            rungs = {r["name"]: r["seconds"] for r in json.loads(done.stdout)["solutions"][0]["rungs"]}
        except (ValueError, KeyError, IndexError):
            checks.append({"wall": wall, "error": (done.stdout + done.stderr)[-1500:]})
            continue
        checks.append({"wall": wall, "rungs": rungs, "outside_rungs": wall - sum(rungs.values())})
    phases["check_cold"] = checks
    args.out.write_text(
        json.dumps({"problem": args.problem, "solution": args.solution, "phases": phases}, indent=1)
    )
    for name, value in phases.items():
        print(name, json.dumps(value, default=lambda x: round(x, 3)))


if __name__ == "__main__":
    main()
