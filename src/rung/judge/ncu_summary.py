"""profile: what Nsight Compute found in one call of the last benchmark case, for a person or an agent.

The judge runs the solution in a confined process of its own under `ncu --set full` (only the
kernels inside the call's NVTX range: no kernel of rung's, none of the reference), keeps the
report for ncu-ui, and has `ncu_report` turn it into JSON (`rung.judge.ncu_export`); this module
reads that JSON. Per kernel, hottest first: every section's figures (`rung.judge.ncu_sections`), the
rules ncu fired with their estimated speedups, and the bottleneck in words: memory-bound (naming
the busiest level of DRAM, L2 and L1), compute-bound, or latency-bound (neither SM nor memory
above LATENCY_BOUND_BELOW percent of peak), naming then the stall that holds warps most. The
call's DRAM bytes against the cost model's minimum: "excess traffic x1.9". The summary, under
SUMMARY_LINES lines, is the rung's message.
"""

from __future__ import annotations

import os
import re
import stat
from collections import defaultdict
from pathlib import Path
from typing import Any

from rung.judge import ncu_sections
from rung.spec import RungResult, Status

PROFILER_REFUSED = ("Failed to profile", "Failed to initialize the profiler")  # ncu's words, on an H200
LATENCY_BOUND_BELOW = 60.0  # percent of peak, SM and memory both
TAIL_LINES = 6
PASSES = re.compile(r'^==PROF== Profiling ".*" - \d+: .* - (\d+) pass(?:es)?\s*$', re.MULTILINE)
SUMMARY_LINES = 40
MAX_LOG_BYTES = 4 * 2**20
DETAILED_KERNELS = 3
RULES_SHOWN = 3
STALL_WORDS = {
    "long_scoreboard": "waiting on global or local memory",
    "short_scoreboard": "waiting on shared memory or special math",
    "barrier": "waiting at a block barrier",
    "membar": "waiting at a memory barrier",
    "wait": "a fixed-latency dependency",
    "math_pipe_throttle": "a busy math pipe",
    "mio_throttle": "a full shared-memory instruction queue",
    "lg_throttle": "a full global-memory instruction queue",
    "tex_throttle": "a full texture queue",
    "not_selected": "another warp issuing",
    "dispatch_stall": "the dispatcher",
    "branch_resolving": "a branch",
    "no_instruction": "instruction fetch",
    "imc_miss": "the constant cache",
    "drain": "memory writes draining at exit",
    "sleeping": "sleep",
}


def failed(
    log_text: str, target_text: str, code: int | None, artifacts: list[str], seconds: float
) -> RungResult:
    """The result when ncu wrote no report: its own refusal (SKIPPED), or the call's failure."""
    said = _tail(log_text) + _tail(target_text)
    if any("ERR_NVGPUCTRPERM" in line for line in said):
        why = "ncu may not read this GPU's performance counters here (ERR_NVGPUCTRPERM)"
        return RungResult("profile", Status.SKIPPED, why, {"said": said}, artifacts, seconds)
    refused = next((ln for ln in said if any(m in ln for m in PROFILER_REFUSED)), "")
    if refused:  # ncu's own failure to attach, not the solution's: nothing measured, said so
        why = f"Nsight Compute could not profile the confined solution process: {refused}"
        return RungResult("profile", Status.SKIPPED, why, {"said": said}, artifacts, seconds)
    why = f"the profiled call failed (exit code {code})" if code else "ncu profiled no kernel in the call"
    return RungResult(
        "profile", Status.ERROR, f"{why}: {said[-1] if said else ''}", {"said": said}, artifacts, seconds
    )


def replay_passes(log_text: str) -> int:
    """How many times ncu ran the profiled kernels, every launch's passes together, from its own
    log (`==PROF== Profiling "name" - 0: 0%....50%....100% - 38 passes`; the profiled process
    writes elsewhere). Each pass also saves and restores the memory a kernel can write, so the
    rung's time is read against both this count and the case's size."""
    return sum(int(m.group(1)) for m in PASSES.finditer(log_text))


def interpret(
    exported: dict[str, Any],
    case: Any,
    min_bytes: float | None,
    artifacts: list[str],
    seconds: float,
    spent: dict[str, float] | None = None,
) -> RungResult:
    """The rung's result from the exported report of one call of `case`; `spent`: where the
    rung's time went (`ncu_s`, `read_s`, `replay_passes`)."""
    kernels = summarize(exported.get("kernels", []))
    if not kernels:
        return RungResult(
            "profile", Status.ERROR, "ncu profiled no kernel in the call", {}, artifacts, seconds
        )
    moved = sum(k["dram_bytes"] for k in kernels)
    figures: dict[str, Any] = {"kernels": kernels, "launches": sum(k["launches"] for k in kernels)}
    figures["dram_bytes"] = moved
    if spent:
        figures["spent"] = spent
    if min_bytes:
        figures["min_bytes"] = min_bytes
        figures["excess_traffic_x"] = moved / min_bytes
    report = next((a for a in artifacts if a.endswith(".ncu-rep")), "")
    return RungResult(
        "profile", Status.OK, "\n".join(summary(kernels, figures, case, report)), figures, artifacts, seconds
    )


def summarize(exported_kernels: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per kernel name, hottest (most total time) first: launches, its sections (of its longest
    launch), rules, the bottleneck, and the headline figures flat (duration_ns, dram_gbps,
    occupancy_pct, registers, reading) for tables."""
    by_name: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for launch in exported_kernels:
        by_name[str(launch.get("name", "?"))].append(launch)
    out = []
    for name, launches in by_name.items():
        read = [(ncu_sections.sections(launch), launch) for launch in launches]
        total_ns = sum(s["speed_of_light"].get("duration_ns", 0.0) for s, _ in read)
        secs, raw = max(read, key=lambda sk: sk[0]["speed_of_light"].get("duration_ns", 0.0))
        sol = secs["speed_of_light"]
        dram = _dram(secs)
        k: dict[str, Any] = {"name": name, "launches": len(launches), "total_us": total_ns / 1e3, **secs}
        k["rules"] = ncu_sections.rules(raw)
        k["dram_bytes"] = sum(_dram(s) for s, _ in read)  # every launch's, for the call's total
        k["reading"] = bottleneck(secs)
        if "duration_ns" in sol:
            k["duration_ns"] = sol["duration_ns"]
            k["dram_gbps"] = dram / sol["duration_ns"] if sol["duration_ns"] else 0.0
        for flat, (section, key) in {
            "occupancy_pct": ("occupancy", "achieved_pct"),
            "registers": ("launch", "registers"),
        }.items():
            if key in secs[section]:
                k[flat] = secs[section][key]
        out.append(k)
    return sorted(out, key=lambda k: -k["total_us"])


def _dram(secs: dict[str, Any]) -> float:
    return float(secs["memory"].get("dram_read_bytes", 0.0) + secs["memory"].get("dram_write_bytes", 0.0))


def bottleneck(secs: dict[str, Any]) -> str:
    """What limits the kernel, in one line."""
    sol = secs["speed_of_light"]
    sm, memory = sol.get("sm_pct"), sol.get("memory_pct")
    if sm is None or memory is None:
        return "no Speed Of Light figures"
    if max(sm, memory) >= LATENCY_BOUND_BELOW:
        if memory >= sm:
            levels = [
                (level, sol[key])
                for level, key in (("DRAM", "dram_pct"), ("L2", "l2_pct"), ("L1", "l1_pct"))
                if key in sol
            ]
            level, pct = max(levels, key=lambda lp: lp[1]) if levels else ("memory", memory)
            return f"memory-bound: {level} at {pct:.0f}% of peak (memory {memory:.0f}%, SM {sm:.0f}%)"
        return f"compute-bound: SM at {sm:.0f}% of peak (memory {memory:.0f}%)"
    said = f"latency-bound: SM {sm:.0f}% and memory {memory:.0f}% of peak"
    stalls = secs["warp_state"].get("stalls", {})
    if stalls:
        reason, cycles = next(iter(stalls.items()))
        said += f"; warps stall most on {reason} ({STALL_WORDS.get(reason, reason)}, {cycles:.1f} cycles per issue)"
    occupancy = secs["occupancy"].get("achieved_pct")
    if occupancy is not None and occupancy < 50:
        said += f"; occupancy {occupancy:.0f}%"
    return said


def summary(kernels: list[dict[str, Any]], figures: dict[str, Any], case: Any, report: str) -> list[str]:
    """The agent's reading, under SUMMARY_LINES lines."""
    lines = [
        f"{figures['launches']} launch(es) of {len(kernels)} kernel(s) in one call of {case}, hottest first; "
        f"bottleneck: {kernels[0]['name'][:60]}: {kernels[0]['reading']}"
    ]
    if "excess_traffic_x" in figures:
        lines.append(
            f"DRAM {_bytes(figures['dram_bytes'])} moved against the cost model's minimum "
            f"{_bytes(figures['min_bytes'])}: excess traffic x{figures['excess_traffic_x']:.2f}"
        )
    for k in kernels[:DETAILED_KERNELS]:
        lines += _kernel_lines(k)
    if len(kernels) > DETAILED_KERNELS:
        lines.append(f"... {len(kernels) - DETAILED_KERNELS} more kernel(s) in the figures")
    if "spent" in figures:
        spent = figures["spent"]
        lines.append(
            f"Nsight Compute: {spent['replay_passes']} replay passes in {spent['ncu_s']:.1f} s, "
            f"the report read in {spent['read_s']:.1f} s"
        )
    if report:
        lines.append(f"full report for ncu-ui: {report}")
    return lines[: SUMMARY_LINES - 1]


def _kernel_lines(k: dict[str, Any]) -> list[str]:
    sol, mem, comp = k["speed_of_light"], k["memory"], k["compute"]
    sched, warp, occ, launch = k["scheduler"], k["warp_state"], k["occupancy"], k["launch"]
    lines = [f"{k['name'][:70]}: {k.get('duration_ns', 0) / 1e3:.1f} us x{k['launches']}; {k['reading']}"]
    lines.append(
        "  speed of light: "
        + _join(
            sol,
            [
                ("sm_pct", "SM {:.0f}%"),
                ("memory_pct", "memory {:.0f}%"),
                ("l1_pct", "L1 {:.0f}%"),
                ("l2_pct", "L2 {:.0f}%"),
                ("dram_pct", "DRAM {:.0f}%"),
            ],
        )
    )
    memory = _join(mem, [("l2_hit_pct", "L2 hit {:.0f}%"), ("l1_hit_pct", "L1 hit {:.0f}%")], empty="")
    if "duration_ns" in k:
        moved = (
            f"{_bytes(mem.get('dram_read_bytes', 0))} read, {_bytes(mem.get('dram_write_bytes', 0))} written"
        )
        memory = f"DRAM {k['dram_gbps']:.0f} GB/s ({moved})" + (f"; {memory}" if memory else "")
    sectors = mem.get("l1_global_load_sectors"), mem.get("l1_global_load_requests")
    if sectors[0] and sectors[1]:
        memory += f"; {sectors[0] / sectors[1]:.1f} sectors per global load request (4 when coalesced)"
    if mem.get("shared_bank_conflicts"):
        memory += f"; {mem['shared_bank_conflicts']:.0f} shared-memory bank conflicts"
    lines.append("  memory: " + memory)
    lines.append(
        "  compute: "
        + _join(
            comp,
            [
                ("ipc_active", "IPC {:.2f}"),
                ("sm_busy_pct", "SM busy {:.0f}%"),
                ("issue_slots_busy_pct", "issue slots {:.0f}%"),
            ],
        )
    )
    lines.append(
        "  scheduler: "
        + _join(
            sched,
            [
                ("issue_active_pct", "issuing {:.0f}% of cycles"),
                ("active_warps", "{:.1f} active"),
                ("eligible_warps", "{:.2f} eligible warps per scheduler"),
            ],
        )
    )
    stalls = ", ".join(f"{r} {c:.1f}" for r, c in list(warp.get("stalls", {}).items())[:3])
    lines.append(
        "  warp state: "
        + _join(warp, [("cycles_per_issue", "{:.1f} cycles per issued instruction")])
        + (f"; stalls (cycles per issue): {stalls}" if stalls else "")
    )
    limits = {
        key.removeprefix("limit_").removesuffix("_blocks"): v
        for key, v in occ.items()
        if key.startswith("limit_")
    }
    limit = (
        f"; limited by {min(limits, key=lambda n: limits[n])} ({min(limits.values()):.0f} blocks per SM)"
        if limits
        else ""
    )
    lines.append(
        "  occupancy: "
        + _join(occ, [("achieved_pct", "achieved {:.0f}%"), ("theoretical_pct", "of theoretical {:.0f}%")])
        + limit
    )
    shared = launch.get("shared_static_bytes", 0) + launch.get("shared_dynamic_bytes", 0)
    lines.append(
        "  launch: "
        + _join(launch, [("grid", "grid {:.0f}"), ("block", "block {:.0f}"), ("registers", "{:.0f} regs")])
        + f", {shared:.0f} B shared"
        + _join(launch, [("waves", ", {:.2f} waves")], empty="")
    )
    for rule in k["rules"][:RULES_SHOWN]:
        speedup = f" (est. speedup {rule['speedup_pct']:.0f}%)" if "speedup_pct" in rule else ""
        said = f"{rule['title']}: {rule['message']}" if rule["title"] else rule["message"]
        lines.append(f"  rule {rule['rule']}{speedup}: {said[:160]}")
    return lines


def _bytes(n: float) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n:.0f} B"


def _join(figures: dict[str, Any], wanted: list[tuple[str, str]], sep: str = ", ", empty: str = "n/a") -> str:
    return sep.join(fmt.format(figures[key]) for key, fmt in wanted if key in figures) or empty


def _tail(text: str) -> list[str]:
    return [ln.strip() for ln in text.strip().splitlines() if ln.strip()][-TAIL_LINES:]


def read_text(path: Path) -> str:
    """The last MAX_LOG_BYTES of a log (what a rung's message quotes is its tail), never through a
    link and never a FIFO; '' where there is no such file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return ""
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return ""
        f.seek(max(0, info.st_size - MAX_LOG_BYTES))
        return f.read(MAX_LOG_BYTES).decode(errors="replace")
