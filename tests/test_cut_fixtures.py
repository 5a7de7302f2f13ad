"""bench/cut_fixtures.py cuts a captured bench trace to its first calls, keeping the device work
those calls launched even where it ran after the cut."""

from __future__ import annotations

import gzip
import json
import sys

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))

import cut_fixtures

from rung.common.cupti_trace import CALL


def test_a_bench_trace_is_cut_after_its_first_calls(tmp_path):
    events = []
    for i in range(7):
        t = 100.0 * i
        events.append({"ph": "X", "name": CALL, "ts": t, "dur": 10.0})
        events.append(
            {
                "ph": "X",
                "cat": "cuda_runtime",
                "name": "cudaLaunchKernel",
                "ts": t + 1,
                "args": {"correlation": i},
            }
        )
        # call 4's kernel runs late, past the start of call 5 (the first one cut)
        start = t + 550 if i == 4 else t + 2
        events.append(
            {"ph": "X", "cat": "kernel", "name": f"k{i}", "ts": start, "dur": 5.0, "args": {"correlation": i}}
        )
    source = tmp_path / "case0.trace.json.gz"
    source.write_bytes(gzip.compress(json.dumps({"traceEvents": events}).encode()))
    cut_fixtures.cut_profiler(source, tmp_path / "out.json")
    kept = json.loads((tmp_path / "out.json").read_text())["traceEvents"]
    assert sum(e["name"] == CALL for e in kept) == cut_fixtures.CALLS
    assert sorted(e["name"] for e in kept if e.get("cat") == "kernel") == ["k0", "k1", "k2", "k3", "k4"]
