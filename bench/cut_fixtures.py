"""Cut the artifacts bench/capture_artifacts.py captured on a GPU down to the CPU tests' fixtures.

    python bench/cut_fixtures.py ARTIFACTS_DIR

- `ncu/softmax_full.json` (every metric of a full Nsight Compute report, as ncu_report read it:
  capture_artifacts.py's dump, or `python -m rung.judge.ncu_export REPORT OUT DIR` on the GPU
  machine) -> tests/fixtures/ncu/softmax_full.json: the metrics rung reads (`rung.judge.ncu_sections`:
  every section's, every stall reason) and every rule result, as captured;
- `proton/matmul_trace*` (proton's instrumentation Chrome trace) -> tests/fixtures/proton/
  matmul_trace.chrome_trace: the events of one CTA in EVERY, as captured; and proton's tree
  (`matmul_tree.hatchet`, small) as it is.
- `profiler/softmax_case0.trace.json.gz` (bench's CUPTI trace of the tuned softmax's first
  case) -> tests/fixtures/profiler/softmax_case0.trace.json: the first CALLS timed calls with
  the harness ranges around them, every event inside them, as captured.
Each part is cut where its source is there.
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from rung.common.cupti_trace import CALL  # noqa: E402
from rung.judge.ncu_sections import SECTIONS, STALL  # noqa: E402

EVERY = 32  # one CTA in EVERY, across the grid: the first ones alone ran their epilogue 28% slower
CTA = re.compile(r"CTA(\d+)$")


def cut_ncu(source: Path, target: Path) -> None:
    doc = json.loads(source.read_text())
    wanted = {m for names in SECTIONS.values() for m in names.values()}
    for kernel in doc["kernels"]:
        kernel["metrics"] = {n: v for n, v in kernel["metrics"].items() if n in wanted or STALL.match(n)}
    target.write_text(json.dumps(doc, indent=1, default=str))


def cut_proton(source: Path, target: Path) -> None:
    text = gzip.decompress(source.read_bytes()).decode() if source.suffix == ".gz" else source.read_text()
    doc = json.loads(text)
    kept = []
    for e in doc.get("traceEvents", []):
        cta = CTA.search(str(e.get("pid", "")))
        if cta is None or int(cta.group(1)) % EVERY == 0:
            kept.append(e)
    target.write_text(json.dumps({**doc, "traceEvents": kept}))


CALLS = 5


def cut_profiler(source: Path, target: Path) -> None:
    """Everything before the (CALLS+1)-th `rung::call` range began, and the device work launched
    before it (which may run after it)."""
    doc = json.loads(gzip.decompress(source.read_bytes()))
    events = doc.get("traceEvents", [])
    starts = sorted(e["ts"] for e in events if e.get("name") == CALL)
    if len(starts) > CALLS:
        early = [e for e in events if e.get("ts", 0) < starts[CALLS]]
        launched = {_correlation(e) for e in early} - {None}
        events = early + [
            e for e in events if e.get("ts", 0) >= starts[CALLS] and _correlation(e) in launched
        ]
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps({**doc, "traceEvents": events}))


def _correlation(event: dict) -> object:
    args = event.get("args")
    return args.get("correlation") if isinstance(args, dict) else None


def main(artifacts: Path) -> None:
    fixtures = ROOT / "tests" / "fixtures"
    ncu = artifacts / "ncu" / "softmax_full.json"
    if ncu.exists():
        cut_ncu(ncu, fixtures / "ncu" / "softmax_full.json")
    traces = [p for p in sorted((artifacts / "proton").glob("matmul_trace*")) if "error" not in p.name]
    if traces:
        cut_proton(traces[0], fixtures / "proton" / "matmul_trace.chrome_trace")
    tree = artifacts / "proton" / "matmul_tree.hatchet"
    if tree.exists():
        shutil.copy(tree, fixtures / "proton" / "matmul_tree.hatchet")
    profiled = artifacts / "profiler" / "softmax_case0.trace.json.gz"
    if profiled.exists():
        cut_profiler(profiled, fixtures / "profiler" / "softmax_case0.trace.json")
    for p in sorted((fixtures / "ncu").glob("softmax_full.json")) + sorted(
        (fixtures / "proton").glob("matmul_*")
    ):
        print(p, p.stat().st_size)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
