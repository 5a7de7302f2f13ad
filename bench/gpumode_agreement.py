"""rung against GPU MODE's own evaluation, on the GPU MODE-format fixtures (GPU only).

    python bench/gpumode_agreement.py --out results/gpumode.json

For each fixture problem in tests/fixtures/gpumode and each of its submissions, correct or wrong:

- rung's verdict and benchmark medians: `rung check FOLDER SUBMISSION --json` (no torch.compile
  baseline, no profile rung);
- the project's own verdict, reached the way its evaluator does: in a fresh process, for every
  test and benchmark case of task.yml, `generate_input(**case)`, the submission's `custom_kernel`
  on a copy of the data, then `check_implementation(data, output)`; all cases must pass;
- for each benchmark case of a submission both call correct, a plain median: events around each
  call after an L2 clear, a sync per call, until the standard error is under 0.1% of the mean.

The fixtures' own benchmark sizes are small (the tests climb them on the CPU), so the folders are
copied with the GPU-sized `benchmarks:` below; nothing else in them changes. Prints a Markdown
table; the JSON holds every figure.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "gpumode"
BENCHMARKS = {
    "vectorsum": [{"size": 2**28, "seed": 13}],
    "grayscale": [{"size": 8192, "seed": 23}],
    "matmul": [{"m": 4096, "n": 4096, "k": 4096, "seed": 33}],
}
AGREE_WITHIN = 0.05


def gpu_sized(problem: str, into: Path) -> Path:
    """A copy of the fixture folder (and the utils.py one level up) with GPU-sized benchmarks."""
    shutil.copy(FIXTURES / "utils.py", into / "utils.py")
    folder = into / problem
    shutil.copytree(FIXTURES / problem, folder)
    task = yaml.safe_load((folder / "task.yml").read_text())
    task["benchmarks"] = BENCHMARKS[problem]
    (folder / "task.yml").write_text(yaml.safe_dump(task, sort_keys=False))
    return folder


def _env() -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]),
    }


def rung_check(folder: Path, submission: Path) -> dict[str, Any]:
    env = {**_env(), "RUNG_BASELINE": "none", "RUNG_SKIP": "profile"}
    cmd = [sys.executable, "-m", "rung", "check", str(folder), str(submission), "--json"]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    if not done.stdout.strip():
        return {"error": done.stderr.strip().splitlines()[-1:] or [f"exit {done.returncode}"]}
    solution = json.loads(done.stdout)["solutions"][0]
    bench = next((r for r in solution["rungs"] if r["name"] == "bench"), {})
    failed = next((r for r in solution["rungs"] if r["status"] in ("FAILED", "ERROR", "TIMEOUT")), None)
    return {
        "verdict": solution["verdict"],
        "why": f"{failed['name']}: {failed['message'][:160]}" if failed else "",
        "medians_ms": [c["median_ms"] for c in bench.get("metrics", {}).get("cases", [])],
        "timing": [_timing(c) for c in bench.get("metrics", {}).get("cases", [])],
    }


def _timing(case: dict[str, Any]) -> dict[str, Any]:
    """Where rung's headline and an events-around-the-call figure can part: rung's own event
    median (the queue kept full, so submission is hidden), the host time of one call, the kernels
    and copies per call, the device's busy time and its idle time between them."""
    events = case.get("events", case)
    return {
        "events_median_ms": events.get("median_ms"),
        "host_ms": events.get("host_overhead_ms"),
        "kernels_per_call": case.get("kernels_per_call"),
        "busy_ms": case.get("busy_ms"),
        "copies_per_call": case.get("copies_per_call"),
        "gap_ms": case.get("gap_ms"),
        "kernels": case.get("kernels"),
    }


def evaluate(folder: Path, submission: Path) -> dict[str, Any]:
    """(child process, cwd = folder) The project's own verdict per case; plain medians if all pass."""
    import torch

    from rung.common.timing import Flusher, plain_protocol

    sys.path[:0] = [str(folder), str(folder.parent)]  # task.yml takes utils.py from one folder up
    reference = importlib.import_module("reference")
    spec = importlib.util.spec_from_file_location("submission", submission)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    task = yaml.safe_load((folder / "task.yml").read_text())

    def copy(data: Any) -> Any:
        if isinstance(data, torch.Tensor):
            return data.clone()
        return type(data)(copy(d) for d in data) if isinstance(data, (tuple, list)) else data

    cases = []
    for kind in ("tests", "benchmarks"):
        for case in task[kind]:
            data = reference.generate_input(**case)
            said = reference.check_implementation(data, module.custom_kernel(copy(data)))
            ok, message = said if isinstance(said, tuple) else (not said, "; ".join(said))
            cases.append({"kind": kind, "case": case, "ok": bool(ok), "message": str(message)[:160]})
    result: dict[str, Any] = {"verdict": "PASS" if all(c["ok"] for c in cases) else "FAIL", "cases": cases}
    if result["verdict"] == "PASS" and torch.cuda.is_available():
        flush, plain = Flusher(), []
        for case in task["benchmarks"]:
            data = reference.generate_input(**case)
            call = lambda i, data=data: module.custom_kernel(data)  # noqa: E731
            plain.append(plain_protocol(call, flush, 0.001, 3.0)["median_ms"])
            torch.cuda.synchronize()
        result["plain_medians_ms"] = plain
    return result


def compare(problem: str, submission: Path, into: Path) -> dict[str, Any]:
    folder = gpu_sized(problem, into / submission.stem)
    cmd = [sys.executable, __file__, "--child", str(folder), str(submission)]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=folder, env=_env(), timeout=900)
    own = (
        json.loads(done.stdout)
        if done.returncode == 0
        else {"error": (done.stderr.strip().splitlines() or ["no output"])[-1][:200]}
    )
    row = {
        "problem": problem,
        "submission": submission.name,
        "rung": rung_check(folder, submission),
        "own": own,
    }
    rung_ms, plain_ms = row["rung"].get("medians_ms", []), own.get("plain_medians_ms", [])
    row["agree"] = row["rung"].get("verdict", "").startswith(own.get("verdict", "?"))
    row["median_vs_plain"] = [r / p - 1 for r, p in zip(rung_ms, plain_ms, strict=False)]
    return row


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| problem | submission | rung | check_implementation | agree | benchmark | rung us | plain us | rung/plain-1 "
        "| rung events us | host us per call | kernels |",
        "| --- | --- | --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        cases = BENCHMARKS[r["problem"]]
        rung_ms, plain_ms = r["rung"].get("medians_ms", []), r["own"].get("plain_medians_ms", [])
        for i, case in enumerate(cases):
            t = r["rung"].get("timing", [])
            figures = (
                f"{rung_ms[i] * 1e3:.1f} | {plain_ms[i] * 1e3:.1f} | {r['median_vs_plain'][i]:+.1%} | "
                f"{t[i]['events_median_ms'] * 1e3:.1f} | {t[i]['host_ms'] * 1e3:.1f} | {t[i]['kernels_per_call']}"
                if i < len(rung_ms) and i < len(plain_ms) and i < len(t)
                else " | | | | | "
            )
            size = {k: v for k, v in case.items() if k != "seed"}
            lines.append(
                f"| {r['problem']} | {r['submission']} | {r['rung'].get('verdict', r['rung'].get('error'))} | "
                f"{r['own'].get('verdict', r['own'].get('error'))} | {'yes' if r['agree'] else 'NO'} | "
                f"{size} | {figures} |"
            )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path)
    ap.add_argument("--child", nargs=2, type=Path, metavar=("FOLDER", "SUBMISSION"))
    args = ap.parse_args()
    if args.child:
        print(json.dumps(evaluate(*args.child)))
        return
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for problem in BENCHMARKS:
            for submission in sorted((FIXTURES / "submissions").glob(f"{problem}_*.py")):
                (Path(tmp) / submission.stem).mkdir()
                rows.append(compare(problem, submission, Path(tmp)))
                print(json.dumps(rows[-1]), flush=True)
    print(table(rows))
    if args.out:
        doc = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "within": AGREE_WITHIN, "rows": rows}
        args.out.write_text(json.dumps(doc, indent=1))


if __name__ == "__main__":
    main()
