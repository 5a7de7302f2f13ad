"""Does Nsight Compute profile a Landlock-confined process? One tiny kernel under ncu, with the
target confining itself in each of several ways (before or after CUDA starts, signals scoped or
not, ncu's own folder readable or not); the exit code, the kernels ncu profiled and the last
words of each. On an H200 (2026-12-04) confining before CUDA started made the target exit 9
under ncu; after it, the target ran, and a target that could not read ncu's folder failed to
profile its kernel.

    python3 bench/ncu_confined.py --out results/ncu_confined.json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from rung import ncu

TARGET = (
    f"RANGE = {ncu.NVTX_RANGE!r}\n"
    + """
import sys, sysconfig, torch
from pathlib import Path
from rung import confine
mode = sys.argv[1]
read = [Path(p) for p in {sys.prefix, sys.base_prefix, *sysconfig.get_paths().values(), *[p for p in sys.path if "site-packages" in p]}]
read.append(Path(confine.__file__).resolve().parents[1])
if sys.argv[3]: read.append(Path(sys.argv[3]))
write = [Path(sys.argv[2])]
def lock(scopes):
    print(confine.confine_self(read, write, other_threads=True, scopes=scopes).to_dict(), flush=True)
if mode == 'before': lock(False)
if mode == 'before_scoped': lock(True)
torch.zeros(1, device='cuda'); torch.cuda.synchronize()
if mode == 'after_init': lock(False)
if mode == 'after_init_scoped': lock(True)
x = torch.ones(1 << 20, device='cuda')
torch.cuda.nvtx.range_push(RANGE); y = x * 2; torch.cuda.synchronize(); torch.cuda.nvtx.range_pop()
print('ok', float(y.sum()), flush=True)
"""
)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    exe = ncu.find()
    results = {}
    tool = str(Path(str(exe)).resolve().parent)
    modes = ["none", "after_init", "after_init_scoped", "before", "before_scoped"]
    for mode, extra in [(m, "") for m in modes] + [(m + "+ncu_dir", tool) for m in modes[1:]]:
        scratch = Path(tempfile.mkdtemp())
        log = scratch / "ncu.csv"
        done = subprocess.run(
            ncu.command(
                str(exe), log, [sys.executable, "-c", TARGET, mode.split("+")[0], str(scratch), extra]
            ),
            capture_output=True,
            text=True,
            timeout=120,
        )
        kernels = len(ncu.parse(log.read_text(errors="replace") if log.exists() else ""))
        said = (done.stdout + done.stderr).strip().splitlines()[-4:]
        results[mode] = {"exit": done.returncode, "kernels": kernels, "said": said}
        print(mode, done.returncode, kernels, said[-2:], flush=True)
    args.out.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
