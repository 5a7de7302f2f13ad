"""Nsight Compute's report as JSON, read with its own `ncu_report` module, in the judge's care.

    python -m rung.judge.ncu_export REPORT.ncu-rep OUT.json MODULE_DIR [MODULE_DIR ...]

Run by the profile rung in a process of its own (the module loads ncu's native library; a crash
there costs this process, not the judge) on the report ncu wrote where the profiled solution
process cannot write. Per profiled kernel, every metric (name -> value, unit, type) and the rule
results ncu's analysis gives (`rule_results_as_dicts`: title, message, estimated speedup), in
the shape `bench/capture_artifacts.py` captured on a GPU, so the CPU tests read real reports.
The JSON is written as a new file (a name there is replaced, never followed). Exits 3 when no
`ncu_report` module could be imported from the folders given.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from rung.common.safe_files import write_new

NO_MODULE = 3


def metric(m: Any) -> dict[str, Any]:
    """One metric: its value as Python gives it (`value()` converts by the metric's kind; older
    modules have only the typed getters)."""
    out: dict[str, Any] = {"type": str(m.metric_type()), "unit": m.unit()}
    try:
        out["value"] = m.value() if hasattr(m, "value") else _typed(m)
    except Exception as e:  # a metric ncu could not collect on this GPU
        out["error"] = f"{type(e).__name__}: {e}"
    if m.num_instances() > 0:
        out["instances"] = m.num_instances()
    return out


def _typed(m: Any) -> Any:
    kind = m.kind()
    if kind == getattr(m, "ValueKind_STRING", None):
        return m.as_string()
    if kind in (getattr(m, "ValueKind_FLOAT", None), getattr(m, "ValueKind_DOUBLE", None)):
        return m.as_double()
    return m.as_uint64()


def kernels(report: Path) -> list[dict[str, Any]]:
    import ncu_report

    context = ncu_report.load_report(str(report))
    found = []
    for r in range(context.num_ranges()):
        span = context.range_by_idx(r)
        for a in range(span.num_actions()):
            action = span.action_by_idx(a)
            kernel: dict[str, Any] = {"name": action.name(), "demangled": _demangled(action), "metrics": {}}
            for name in action.metric_names():
                kernel["metrics"][name] = metric(action.metric_by_name(name))
            try:
                kernel["rule_results_as_dicts"] = list(action.rule_results_as_dicts())
            except Exception as e:  # older ncu_report: no rule results in Python
                kernel["rule_results_as_dicts_error"] = f"{type(e).__name__}: {e}"
            found.append(kernel)
    return found


def _demangled(action: Any) -> str:
    """The kernel's full C++ name (`void f<int>(float*)`; a Triton or extern "C" kernel's is its
    bare name): what CUPTI names it by, and, unlike the function's name ncu shows, never a name a
    Python identifier can spell for a templated library kernel. '' where this ncu_report lacks it."""
    base = getattr(action, "NameBase_DEMANGLED", None)
    try:
        return str(action.name(base)) if base is not None else ""
    except Exception:
        return ""


def main(argv: list[str]) -> int:
    report, out, dirs = Path(argv[0]), Path(argv[1]), argv[2:]
    for folder in dirs:
        sys.path.insert(0, folder)
        try:
            import ncu_report  # noqa: F401
        except ImportError:
            sys.path.remove(folder)
            continue
        write_new(out, json.dumps({"ncu_report": folder, "kernels": kernels(report)}, default=str))
        return 0
    print(f"no ncu_report module in {dirs or 'any folder'}", file=sys.stderr)
    return NO_MODULE


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
