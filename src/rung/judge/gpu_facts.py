"""What the driver says about a GPU, read through NVML (nvidia-ml-py's `pynvml`): clocks, the
reasons the clock is held down, power and its limit, ECC, driver, name and UUID.

Read in the judge (and so on behalf of `rung device`), never in the solution process: NVML reads
the whole card, and what a solution could learn or change through it is not its business. The
GPU is found by the UUID CUDA gives it, not by NVML's index: NVML ignores CUDA_VISIBLE_DEVICES, so
on a machine whose GPUs are shared among workers its GPU 0 may be another worker's.

Without NVML (no driver, no GPU, nvidia-ml-py missing) the record is `{"available": False,
"reason": ...}`. A query the card does not support (ECC on most consumer cards, application
clocks on some) is None, its NVML error under `unread`; the rest of the record stands.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from typing import Any

# The clock event reasons of nvml.h (nvmlClocksEventReason*), bit by bit, as names a person reads.
REASONS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}
CLOCK_SM, CLOCK_MEM = 1, 2  # nvmlClockType_t
CORRECTED, UNCORRECTED, VOLATILE = 0, 1, 0  # nvmlMemoryErrorType_t, nvmlEccCounterType_t
BUSY_PCT = 5  # utilization of an idle GPU reads 0; a few percent is another process's work


def unavailable(reason: str) -> dict[str, Any]:
    return {"available": False, "reason": reason}


def read(uuid: str = "", nvml: Any = None) -> dict[str, Any]:
    """The record of the GPU whose CUDA UUID is `uuid` (NVML's GPU 0 when empty). `nvml` stands
    in for the pynvml module (tests pass a fake); by default it is imported here."""
    nvml, why = _started(nvml)
    if nvml is None:
        return unavailable(why)
    try:
        if uuid:
            handle = nvml.nvmlDeviceGetHandleByUUID(uuid if uuid.startswith("GPU-") else f"GPU-{uuid}")
        else:
            handle = nvml.nvmlDeviceGetHandleByIndex(0)
        return translate(nvml, handle)
    except nvml.NVMLError as e:
        return unavailable(f"NVML has no GPU {uuid or 0}: {e}")
    finally:
        nvml.nvmlShutdown()


def others_using(uuid: str, ours: set[int], idle_before: bool = False, nvml: Any = None) -> dict[str, Any]:
    """Who else uses the GPU whose CUDA UUID is `uuid`: the compute and graphics processes NVML
    lists that are not in `ours` (this judge, its solution process), and its utilization over
    NVML's last sample period (ours included: only read before this process's own work says
    anything of others). `busy` where another process is listed, or, with `idle_before`, the
    utilization reads BUSY_PCT or more; where NVML cannot tell (no driver, no bindings), `unknown`.
    A container that hides other namespaces' process ids lists none: utilization still shows them."""
    nvml, why = _started(nvml)
    if nvml is None:
        return {"busy": False, "unknown": why}
    try:
        handle = nvml.nvmlDeviceGetHandleByUUID(uuid if uuid.startswith("GPU-") else f"GPU-{uuid}")
        pids: set[int] = set()
        for ask in ("nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetGraphicsRunningProcesses"):
            with contextlib.suppress(nvml.NVMLError, AttributeError):
                pids |= {int(p.pid) for p in getattr(nvml, ask)(handle)}
        # In a container NVML lists the host's process ids, none of them ours: then only how
        # many there are beyond ours says that others are there.
        namespaced = bool(pids) and not pids & ours
        others = sorted(
            pids if namespaced and len(pids) > len(ours) else set() if namespaced else pids - ours
        )
        try:
            busy_pct: int | None = int(nvml.nvmlDeviceGetUtilizationRates(handle).gpu)
        except nvml.NVMLError:
            busy_pct = None
    except nvml.NVMLError as e:
        return {"busy": False, "unknown": f"NVML has no GPU {uuid}: {e}"}
    finally:
        nvml.nvmlShutdown()
    return {
        "busy": bool(others) or (idle_before and busy_pct is not None and busy_pct >= BUSY_PCT),
        "other_pids": others[:10],
        "utilization_pct": busy_pct,
    }


def count(nvml: Any = None) -> int:
    """How many GPUs the driver has, 0 without NVML: what the local executor gives workers,
    counted without touching CUDA (the controller never does)."""
    nvml, _ = _started(nvml)
    if nvml is None:
        return 0
    try:
        return int(nvml.nvmlDeviceGetCount())
    except nvml.NVMLError:
        return 0
    finally:
        nvml.nvmlShutdown()


def _started(nvml: Any) -> tuple[Any, str]:
    """The bindings (`nvml`, else pynvml imported here) with NVML started, or None and why not."""
    if nvml is None:
        try:
            import pynvml
        except ImportError as e:
            return None, f"nvidia-ml-py is not installed ({e})"
        nvml = pynvml
    try:
        nvml.nvmlInit()
    except nvml.NVMLError as e:
        return None, f"NVML did not start: {e}"
    return nvml, ""


def translate(nvml: Any, handle: Any) -> dict[str, Any]:
    """NVML's answers for one GPU as rung's record: units in the keys, reasons by name."""
    record: dict[str, Any] = {"available": True}
    unread: dict[str, str] = {}

    def query(key: str, ask: Callable[[], Any], convert: Callable[[Any], Any] = lambda v: v) -> Any:
        try:
            record[key] = convert(ask())
        except nvml.NVMLError as e:
            record[key] = None
            unread[key] = f"NVML: {e}"
        return record[key]

    query("name", lambda: nvml.nvmlDeviceGetName(handle), _text)
    query("uuid", lambda: nvml.nvmlDeviceGetUUID(handle), _text)
    query("driver", nvml.nvmlSystemGetDriverVersion, _text)
    query("sm_mhz", lambda: nvml.nvmlDeviceGetClockInfo(handle, CLOCK_SM), int)
    query("max_sm_mhz", lambda: nvml.nvmlDeviceGetMaxClockInfo(handle, CLOCK_SM), int)
    query("app_sm_mhz", lambda: nvml.nvmlDeviceGetApplicationsClock(handle, CLOCK_SM), int)
    query("default_app_sm_mhz", lambda: nvml.nvmlDeviceGetDefaultApplicationsClock(handle, CLOCK_SM), int)
    query("mem_mhz", lambda: nvml.nvmlDeviceGetClockInfo(handle, CLOCK_MEM), int)
    query("max_mem_mhz", lambda: nvml.nvmlDeviceGetMaxClockInfo(handle, CLOCK_MEM), int)
    query("clock_reasons", lambda: _reason_mask(nvml, handle), reason_names)
    query("power_w", lambda: nvml.nvmlDeviceGetPowerUsage(handle), _watts)
    query("power_limit_w", lambda: nvml.nvmlDeviceGetEnforcedPowerLimit(handle), _watts)
    mode = query("ecc_mode", lambda: nvml.nvmlDeviceGetEccMode(handle), _ecc_mode)
    for key, kind in (("ecc_corrected_volatile", CORRECTED), ("ecc_uncorrected_volatile", UNCORRECTED)):
        if mode == "enabled":
            query(key, functools.partial(nvml.nvmlDeviceGetTotalEccErrors, handle, kind, VOLATILE), int)
        else:
            record[key] = None
            unread[key] = f"ECC is {mode or 'not readable'}"
    record["unread"] = unread
    return record


def _reason_mask(nvml: Any, handle: Any) -> int:
    # NVML 12.x renamed "throttle reasons" to "clock event reasons"; older bindings have only the first.
    ask = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or (
        nvml.nvmlDeviceGetCurrentClocksThrottleReasons
    )
    return int(ask(handle))


def reason_names(mask: int) -> list[str]:
    """The names of the bits set in a clock event reason mask; a bit nvml.h did not name when
    this was written is kept as its hex value, not dropped."""
    names = [name for bit, name in REASONS.items() if mask & bit]
    rest = mask & ~sum(REASONS)
    return [*names, f"0x{rest:x}"] if rest else names


def _text(value: str | bytes) -> str:
    # Bindings before 11.5 return bytes.
    return value.decode() if isinstance(value, bytes) else str(value)


def _watts(milliwatts: int) -> float:
    return milliwatts / 1000


def _ecc_mode(modes: list[int]) -> str:
    # nvmlDeviceGetEccMode answers [current, pending]; the current one is the card's state now.
    return "enabled" if modes[0] else "disabled"
