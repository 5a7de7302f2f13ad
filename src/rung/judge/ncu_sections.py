"""Nsight Compute's sections, read from the JSON `rung.judge.ncu_export` wrote (pure, no ncu).

Per profiled kernel, the figures a kernel engineer reads in ncu-ui's Details page, grouped as
its sections are: speed of light, memory workload (the L1/L2/DRAM figures of its memory chart),
compute workload, scheduler statistics, warp state (the stall reasons, cycles per issued
instruction), occupancy, launch statistics and source counters; and the rules ncu's analysis
fired, with their estimated speedups. A figure this ncu did not collect is left out, not zero.
Values are converted to base units (ns, bytes, percent) whatever unit the report stored.
"""

from __future__ import annotations

import ast
import re
from typing import Any

# section -> {rung's name -> ncu metric}; names carry their units
SECTIONS: dict[str, dict[str, str]] = {
    "speed_of_light": {
        "duration_ns": "gpu__time_duration.sum",
        "sm_pct": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
        "memory_pct": "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
        "l1_pct": "l1tex__throughput.avg.pct_of_peak_sustained_active",
        "l2_pct": "lts__throughput.avg.pct_of_peak_sustained_elapsed",
        "dram_pct": "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
        "elapsed_cycles": "gpc__cycles_elapsed.max",
        "sm_hz": "sm__cycles_elapsed.avg.per_second",
    },
    "memory": {
        "dram_read_bytes": "dram__bytes_read.sum",
        "dram_write_bytes": "dram__bytes_write.sum",
        "dram_bytes_per_s": "dram__bytes.sum.per_second",
        "l2_hit_pct": "lts__t_sector_hit_rate.pct",
        "l1_hit_pct": "l1tex__t_sector_hit_rate.pct",
        "l2_read_sectors": "lts__t_sectors_op_read.sum",
        "l2_write_sectors": "lts__t_sectors_op_write.sum",
        "l1_global_load_sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
        "l1_global_load_requests": "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
        "l1_global_store_sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
        "l1_global_store_requests": "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
        "shared_bank_conflicts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
        "mem_busy_pct": "gpu__compute_memory_request_throughput.avg.pct_of_peak_sustained_elapsed",
    },
    "compute": {
        "ipc_active": "sm__inst_executed.avg.per_cycle_active",
        "ipc_elapsed": "sm__inst_executed.avg.per_cycle_elapsed",
        "sm_busy_pct": "sm__instruction_throughput.avg.pct_of_peak_sustained_active",
        "issue_slots_busy_pct": "sm__inst_issued.avg.pct_of_peak_sustained_active",
        "instructions": "smsp__inst_executed.sum",
    },
    "scheduler": {
        "issue_active_pct": "smsp__issue_active.avg.pct_of_peak_sustained_active",
        "issued_warps": "smsp__issue_active.avg.per_cycle_active",
        "active_warps": "smsp__warps_active.avg.per_cycle_active",
        "eligible_warps": "smsp__warps_eligible.avg.per_cycle_active",
    },
    "warp_state": {
        "cycles_per_issue": "smsp__average_warp_latency_per_inst_issued.ratio",
        "cycles_per_instruction": "smsp__average_warps_active_per_inst_executed.ratio",
    },
    "occupancy": {
        "achieved_pct": "sm__warps_active.avg.pct_of_peak_sustained_active",
        "theoretical_pct": "sm__maximum_warps_per_active_cycle_pct",
        "limit_registers_blocks": "launch__occupancy_limit_registers",
        "limit_shared_blocks": "launch__occupancy_limit_shared_mem",
        "limit_warps_blocks": "launch__occupancy_limit_warps",
        "limit_blocks": "launch__occupancy_limit_blocks",
    },
    "launch": {
        "grid": "launch__grid_size",
        "block": "launch__block_size",
        "registers": "launch__registers_per_thread",
        "shared_static_bytes": "launch__shared_mem_per_block_static",
        "shared_dynamic_bytes": "launch__shared_mem_per_block_dynamic",
        "waves": "launch__waves_per_multiprocessor",
        "sms": "device__attribute_multiprocessor_count",
    },
    "source": {
        "branch_uniform_pct": "smsp__sass_average_branch_targets_threads_uniform.pct",
        "thread_instructions": "smsp__thread_inst_executed.sum",
        "excessive_l2_sectors": "derived__memory_l2_theoretical_sectors_global_excessive",
    },
}
# WarpStateStats: cycles a warp spent stalled, per issued instruction, by reason
STALL = re.compile(r"^smsp__average_warps_issue_stalled_(\w+?)_per_issue_active\.ratio$")
SCALE = {
    "nsecond": 1.0,
    "usecond": 1e3,
    "msecond": 1e6,
    "second": 1e9,
    "byte": 1.0,
    "Kbyte": 1e3,
    "Mbyte": 1e6,
    "Gbyte": 1e9,
    "Tbyte": 1e12,
    "byte/second": 1.0,
    "Kbyte/second": 1e3,
    "Mbyte/second": 1e6,
    "Gbyte/second": 1e9,
    "Tbyte/second": 1e12,
    "hz": 1.0,
    "Khz": 1e3,
    "Mhz": 1e6,
    "Ghz": 1e9,
    "cycle/nsecond": 1e9,
    "cycle/usecond": 1e6,
    "cycle/second": 1.0,
}


def value(metrics: dict[str, Any], name: str) -> float | None:
    """A metric's value as a number in base units, or None where ncu has none."""
    entry = metrics.get(name)
    if not isinstance(entry, dict):
        return None
    raw = entry.get("value")
    if isinstance(raw, bool) or not isinstance(raw, (int, float)):
        return None
    return float(raw) * SCALE.get(str(entry.get("unit", "")), 1.0)


def sections(kernel: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Every section's figures that this kernel's report holds."""
    metrics = kernel.get("metrics", {})
    out: dict[str, dict[str, float]] = {}
    for section, names in SECTIONS.items():
        got = {short: v for short, metric in names.items() if (v := value(metrics, metric)) is not None}
        out[section] = got
    stalls = {m.group(1): v for name in metrics if (m := STALL.match(name)) and (v := value(metrics, name))}
    out["warp_state"]["stalls"] = dict(sorted(stalls.items(), key=lambda kv: -kv[1]))  # type: ignore[assignment]
    return out


def rules(kernel: dict[str, Any]) -> list[dict[str, Any]]:
    """The rules ncu fired with something to say (not an OK), largest estimated speedup first:
    identifier, section, type, title, message, and `speedup_pct` where ncu estimated one."""
    fired = []
    for result in kernel.get("rule_results_as_dicts") or []:
        message = _as_dict(result.get("rule_message"))
        text = str(message.get("message") or "").strip()
        kind = str(message.get("type", ""))
        if not text or kind.upper().endswith(("OK", "NONE")) or kind in ("0", "1"):
            continue
        rule: dict[str, Any] = {
            "rule": str(result.get("rule_identifier") or result.get("name") or "?"),
            "section": str(result.get("section_identifier") or ""),
            "type": kind,
            "title": str(message.get("title") or "").strip(),
            "message": " ".join(text.split()),
        }
        speedup = _as_dict(result.get("speedup_estimation")).get("speedup")
        if isinstance(speedup, (int, float)) and not isinstance(speedup, bool):
            rule["speedup_pct"] = float(speedup)
        fired.append(rule)
    return sorted(fired, key=lambda r: -r.get("speedup_pct", -1.0))


def _as_dict(raw: Any) -> dict[str, Any]:
    """A field of a rule result: a dict, or the text of one (the export's `default=str`)."""
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str) and raw.startswith("{"):
        try:
            parsed = ast.literal_eval(raw)
        except (ValueError, SyntaxError):
            return {}
        return parsed if isinstance(parsed, dict) else {}
    return {}
