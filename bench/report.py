"""Markdown tables from a gpu_suite.sh work folder: ladders, timings, roofline, fidelity.

python bench/report.py WORK_DIR
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from rung.common.stats import relative_error


def _rungs(solution: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["name"]: r for r in solution["rungs"]}


def checks(work: Path) -> list[str]:
    lines = [
        "| problem | solution | verdict | case | median us | ±% | GB/s | TFLOP/s | % roofline | x ref | x compile |",
        "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for path in sorted(work.glob("check_*.json")):
        if not path.stat().st_size:
            continue
        doc = json.loads(path.read_text())
        for s in doc["solutions"]:
            rungs = _rungs(s)
            cases = rungs.get("bench", {}).get("metrics", {}).get("cases", [])
            roof = {
                json.dumps(c["case"]): c
                for c in rungs.get("roofline", {}).get("metrics", {}).get("cases", [])
            }
            name = Path(s["path"]).name
            if not cases:
                bad = next((r for r in s["rungs"] if r["status"] in ("FAILED", "ERROR", "TIMEOUT")), None)
                why = f"{bad['name']}: {bad['message'][:80]}" if bad else ""
                lines.append(f"| {doc['problem']} | {name} | {s['verdict']} | {why} | | | | | | | |")
            for c in cases:
                r = roof.get(json.dumps(c["case"]), {})
                pct = f"{r['pct_of_roofline']:.0%}" if r else ""
                comp = f"{c['speedup_vs_compile']:.2f}" if "speedup_vs_compile" in c else ""
                lines.append(
                    f"| {doc['problem']} | {name} | {s['verdict']} | {c['case']} | {c['median_ms'] * 1e3:.1f} | "
                    f"{relative_error(c) * 100:.2f} | {c.get('achieved_gbps', 0):.0f} | "
                    f"{c.get('achieved_tflops', 0):.1f} | {pct} | {c['speedup_vs_reference']:.2f} | {comp} |"
                )
    return lines


def backends(work: Path) -> list[str]:
    """Per solution of the `backends` stage: its language, verdict, build (cold, then from the
    build cache), registers, and time and % of roofline at its largest benchmark case."""
    lines = [
        "| problem | solution | backend | verdict | build s cold | build s cached | max regs | largest case | median us | % roofline |",
        "| --- | --- | --- | --- | ---: | ---: | ---: | --- | ---: | ---: |",
    ]
    cached = {
        s["path"]: _rungs(s)
        for path in sorted(work.glob("cached_*_backends.json"))
        if path.stat().st_size
        for s in json.loads(path.read_text())["solutions"]
    }
    for path in sorted(work.glob("check_*_backends.json")):
        if not path.stat().st_size:
            lines.append(f"| {path.name} | (cut at the stage's cap: no verdict) | | | | | | | | |")
            continue
        doc = json.loads(path.read_text())
        for s in doc["solutions"]:
            rungs = _rungs(s)
            build = rungs.get("compile", {}).get("metrics", {})
            again = cached.get(s["path"], {}).get("compile", {}).get("metrics", {})
            cases = rungs.get("bench", {}).get("metrics", {}).get("cases", [])
            roof = rungs.get("roofline", {}).get("metrics", {}).get("cases", [])
            last, pct = (cases[-1], "") if cases else ({}, "")
            if roof:
                pct = f"{roof[-1]['pct_of_roofline']:.0%}"
            if s["verdict"] != "PASS":
                bad = next((r for r in s["rungs"] if r["status"] in ("FAILED", "ERROR", "TIMEOUT")), None)
                pct = f"{bad['name']}: {bad['message'][:70]}" if bad else pct
            backend = rungs.get("load", {}).get("metrics", {}).get("backend", "")
            timed = f"{last['case']} | {last['median_ms'] * 1e3:.1f}" if last else " | "
            lines.append(
                f"| {doc['problem']} | {Path(s['path']).name} | {backend} | {s['verdict']} "
                f"| {_num(build.get('build_s'))} | {_num(again.get('build_s'))} "
                f"| {build.get('max_registers', '')} | {timed} | {pct} |"
            )
    return lines if len(lines) > 2 else []


def _num(x: Any) -> str:
    return f"{x:.2f}" if isinstance(x, (int, float)) else ""


def time_to_verdict(work: Path) -> list[str]:
    path = work / "ttv_softmax.json"
    if not path.exists() or not path.stat().st_size:
        return []
    s = json.loads(path.read_text())["solutions"][0]
    seconds = {r["name"]: r["seconds"] for r in s["rungs"]}
    total = sum(v for k, v in seconds.items() if k != "compile")
    parts = ", ".join(f"{k} {v:.2f}" for k, v in seconds.items() if v >= 0.01)
    bench = next((r for r in s["rungs"] if r["name"] == "bench"), {})
    walls = [
        f"{c['case']}: " + ", ".join(f"{k} {v:.2f}" for k, v in c.get("wall_s", {}).items())
        for c in bench.get("metrics", {}).get("cases", [])
    ]
    return [
        f"Time to verdict, tuned softmax, load through roofline, compile excluded: **{total:.2f} s** ({parts})",
        "",
        *(f"- bench {w}" for w in walls),
    ]


def fidelity(work: Path) -> list[str]:
    path, log = work / "fidelity.json", work / "fidelity.log"
    if path.exists():
        doc = json.loads(path.read_text())
        title = f"Fidelity ({doc['device']}, torch {doc['torch']}, {doc['date']}):"
    elif log.exists():  # cut off by the stage's time cap: the rows it printed as it went
        doc = {"rows": [json.loads(x) for x in log.read_text().splitlines() if x.startswith("{")]}
        title = f"Fidelity, cut off by the time cap after {len(doc['rows'])} kernels:"
    else:
        return []
    lines = [
        title,
        "",
        "| kernel | rung us | ncu us | rung/ncu-1 | graph us | graph/ncu-1 | do_bench us | plain us | 5-run spread "
        "| rung s | plain s (same SEM) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in doc["rows"]:
        ncu = r.get("ncu", {})

        def us(v: float | None) -> str:
            return f"{v * 1e3:.2f}" if isinstance(v, (int, float)) else ""

        def pct(v: float | None) -> str:
            return f"{v:+.1%}" if isinstance(v, (int, float)) else ""

        lines.append(
            f"| {r['target']} | {us(r['rung_median_ms'])} | {us(ncu.get('median_ms'))} | {pct(r.get('rung_vs_ncu'))} | "
            f"{us(r.get('graph_median_ms'))} | {pct(r.get('graph_vs_ncu'))} | {us(r['do_bench_median_ms'])} | "
            f"{us(r['plain_median_ms'])} | {r['rung_spread']:.2%} | {r.get('rung_wall_s', 0):.2f} | "
            f"{r.get('plain_same_sem_wall_s', 0):.2f} |"
        )
    return lines


def profiles(work: Path) -> list[str]:
    """The profile rung's hottest kernel per profiled solution (Nsight Compute)."""
    lines = [
        "| problem | solution | hottest kernel | us | reading | DRAM GB/s | occupancy % | regs |",
        "| --- | --- | --- | ---: | --- | ---: | ---: | ---: |",
    ]
    for path in sorted(work.glob("check_*.json")):
        if not path.stat().st_size:
            continue
        doc = json.loads(path.read_text())
        for sol in doc["solutions"]:
            prof = _rungs(sol).get("profile", {})
            if prof.get("status") != "OK":
                continue
            k = prof["metrics"]["kernels"][0]
            lines.append(
                f"| {doc['problem']} | {Path(sol['path']).name} | {k['name'][:40]} | "
                f"{k.get('duration_ns', 0) / 1e3:.1f} | {k['reading']} | {k.get('dram_gbps', 0):.0f} | "
                f"{k.get('occupancy_pct', 0):.0f} | {k.get('registers', 0):.0f} |"
            )
    return lines if len(lines) > 2 else []


def _geomean_ms(solution: dict[str, Any]) -> float | None:
    cases = _rungs(solution).get("bench", {}).get("metrics", {}).get("cases", [])
    if not cases:
        return None
    product = 1.0
    for c in cases:
        product *= c["median_ms"]
    return product ** (1 / len(cases))


def tune(work: Path) -> list[str]:
    """The tune agent's best version from naive against the tuned example (geometric-mean medians)."""
    lines = [
        "| problem | candidates | stopped | best (tune) | geomean us | tuned geomean us | best / tuned |",
        "| --- | ---: | --- | --- | ---: | ---: | ---: |",
    ]
    for path in sorted(work.glob("tune_*.json")):
        if not path.stat().st_size:  # cut off by the stage's time cap
            lines.append(f"| {path.stem.removeprefix('tune_')} | | cut off by the time cap | | | | |")
            continue
        doc = json.loads(path.read_text())
        name = path.stem.removeprefix("tune_")
        tuned_path = work / f"check_{name}_tuned.json"
        tuned = json.loads(tuned_path.read_text())["solutions"][0] if tuned_path.exists() else None
        best_ms, tuned_ms = _geomean_ms(doc["best"]), _geomean_ms(tuned) if tuned else None
        ratio = f"{best_ms / tuned_ms:.3f}" if best_ms and tuned_ms else ""
        lines.append(
            f"| {name} | {len(doc['candidates'])} | {doc['reason']} | {Path(doc['best']['path']).name} | "
            f"{best_ms * 1e3 if best_ms else float('nan'):.1f} | {tuned_ms * 1e3 if tuned_ms else float('nan'):.1f} | {ratio} |"
        )
    return lines if len(lines) > 2 else []


def gpumode(work: Path) -> list[str]:
    path = work / "gpumode.json"
    if not path.exists():
        return []
    from gpumode_agreement import table  # beside this file

    return ["rung against GPU MODE's own evaluation:", "", table(json.loads(path.read_text())["rows"])]


def event_noise(work: Path) -> list[str]:
    path = work / "event_noise.json"
    if not path.exists():
        return []
    lines = [
        "Event samples of short kernels (bench/event_noise.py):",
        "",
        "| kernel | condition | stop | samples | median us | p20-p80 us | tail samples (first in batch) | max us | SEM % "
        "| samples for 0.5% | wall s | gc collections (gen 0/1/2) | longest gc ms |",
        "| --- | --- | --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | --- | ---: |",
    ]
    for r in json.loads(path.read_text())["rows"]:
        lines.append(
            f"| {r['kernel']} | {r['condition']} | {r['policy']} | {r['samples']} | {r['median_ms'] * 1e3:.2f} | "
            f"{r['p20_ms'] * 1e3:.2f}-{r['p80_ms'] * 1e3:.2f} | {r['tail_samples']} ({r.get('tail_first_in_batch', '')}) | {r['max_ms'] * 1e3:.1f} | "
            f"{r['rel_sem'] * 100:.2f} | {r['samples_for_0.5pct']} | {r['wall_s']:.2f} | "
            f"{'/'.join(map(str, r['gc_collections']))} | {r['gc_longest_ms']:.1f} |"
        )
    return lines


def main() -> None:
    work = Path(sys.argv[1])
    device = work / "device.json"
    if device.exists():
        d = json.loads(device.read_text())["device"]
        print(
            f"Device: {d['name']} ({d['arch']}, driver {d['driver']}); ceilings:",
            ", ".join(f"{k} {v:.1f}" for k, v in d["ceilings"].items() if isinstance(v, (int, float))),
        )
        print()
    for block in (
        checks(work),
        backends(work),
        profiles(work),
        time_to_verdict(work),
        event_noise(work),
        gpumode(work),
        fidelity(work),
        tune(work),
    ):
        if block:
            print("\n".join(block))
            print()


if __name__ == "__main__":
    main()
