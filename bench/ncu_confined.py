"""Does Nsight Compute profile a Landlock-confined process, and what does the target need?

One tiny kernel under ncu, the target confining itself after CUDA started (signals and abstract
sockets left open, ncu's own folder readable) with more and more of the filesystem opened, to
find what ncu's injection needs: /tmp, ncu's lock file there, or everything (which separates
Landlock's file rules from the rest of the confinement). For each: the exit code, the kernels
profiled, the target's last words and ncu's own errors. On an H200 (2026-12-04) every confined
variant with the file rules of the solution process exited 9.

    python3 bench/ncu_confined.py --out results/ncu_confined.json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from rung.common import ncu

TARGET = (
    f"RANGE = {ncu.NVTX_RANGE!r}\n"
    + """
import sys, sysconfig, torch
from pathlib import Path
from rung import confine
import json
mode = sys.argv[1]
extra = json.loads(sys.argv[4])
read = [Path(p) for p in {sys.prefix, sys.base_prefix, *sysconfig.get_paths().values(), *[p for p in sys.path if "site-packages" in p]}]
read.append(Path(confine.__file__).resolve().parents[1])
if sys.argv[3]: read.append(Path(sys.argv[3]))
read += [Path(p) for p in extra["read"]]
write = [Path(sys.argv[2])] + [Path(p) for p in extra["write"]]
if extra.get("rung"):  # what the profile rung's target grants itself
    import os
    from rung.solution.profile_target import injected_roots, ncu_locks
    read += injected_roots(os.environ)
    write += ncu_locks()
    print("granted", [str(p) for p in injected_roots(os.environ)], [str(p) for p in ncu_locks()], flush=True)
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
    lock = "/tmp/nvidia"  # ncu's lock file is /tmp/nvidia/nsight_compute/lock
    variants = [
        ("none", "", [], []),
        ("after_init", tool, [], []),
        ("after_init+lock", tool, [], [lock]),
        ("after_init+rung", tool, [], []),
        ("after_init_scoped+rung", tool, [], []),
        ("after_init+tmp", tool, [], ["/tmp"]),
        ("after_init+tmp+proc", tool, ["/proc"], ["/tmp"]),
        ("after_init+tmp+etc", tool, ["/etc"], ["/tmp"]),
        ("after_init+tmp+run_var", tool, ["/run", "/var"], ["/tmp"]),
        ("after_init+tmp+opt", tool, ["/opt"], ["/tmp"]),
        ("after_init+tmp+home", tool, ["/root", "/home"], ["/tmp"]),
        ("after_init+tmp+dev", tool, ["/dev"], ["/tmp"]),
        ("after_init+tmp+read_all", tool, ["/"], ["/tmp"]),
        ("after_init+lock+read_all", tool, ["/"], [lock]),
        ("after_init+all", tool, ["/"], ["/"]),
    ]
    for name, folder, read, write in variants:
        scratch = Path(tempfile.mkdtemp())
        log, report = scratch / "ncu.log", scratch / "report.ncu-rep"
        extra = json.dumps({"read": read, "write": write, "rung": name.endswith("+rung")})
        done = subprocess.run(
            ncu.command(
                str(exe),
                report,
                log,
                [sys.executable, "-c", TARGET, name.split("+")[0], str(scratch), folder, extra],
            ),
            capture_output=True,
            text=True,
            timeout=120,
        )
        text = log.read_text(errors="replace") if log.exists() else ""
        kernels = int(report.exists())  # a report: ncu profiled the confined call
        said = (done.stdout + done.stderr).strip().splitlines()[-5:]
        errors = [ln for ln in text.splitlines() if ln.startswith(("==ERROR==", "==WARNING=="))][:6]
        results[name] = {"exit": done.returncode, "kernels": kernels, "said": said, "ncu": errors}
        print(name, done.returncode, kernels, said[-1:], errors[:2], flush=True)
    args.out.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
