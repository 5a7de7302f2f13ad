"""The cache of measured device ceilings, one entry per GPU (its UUID), driver and clocks
(controller side).

Ceilings are measured once (`rung device`, or on the first GPU run; `rung device --remeasure`
measures again) and kept in `RUNG_CACHE_DIR/devices.json` (default `~/.cache/rung/devices.json`).
Ceilings the judge marked `not_cached` (measured while another process used the GPU, or far below
the datasheet: `rung.judge.ceilings`) are used for this check and never kept, so a poisoned
measurement cannot fail every later check on the machine.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from rung import knobs
from rung.spec import Device

METHOD = 5  # how the ceilings are measured; an entry measured another way is measured again
# (2: the DRAM ceiling is the faster of a copy and an add, not the copy alone; 3: l2_bytes kept;
# 4: the launch floor, launch_us and graph_replay_us; 5: measured alone, checked against the datasheet)


def cache_path() -> Path:
    return knobs.cache_dir() / "devices.json"


def key(device: Device) -> str:
    """The card itself (NVML's UUID), its driver, and the clocks and power limit it may run at:
    another card of the model, or the same one under other settings, is measured again."""
    facts = device.nvml or {}
    clocks = "|".join(
        f"{k} {facts.get(k)}" for k in ("app_sm_mhz", "max_sm_mhz", "max_mem_mhz", "power_limit_w")
    )
    return f"{device.name}|{facts.get('uuid') or 'no uuid'}|driver {device.driver}|{clocks}"


def cached(device: Device) -> dict[str, Any] | None:
    """The ceilings measured for this GPU model and driver, if measured the current way."""
    try:
        entry = json.loads(cache_path().read_text()).get(key(device))
    except (OSError, ValueError):
        return None
    return dict(entry["ceilings"]) if entry and entry.get("method") == METHOD else None


def remember(device: Device, ceilings: dict[str, Any]) -> bool:
    """Keep `ceilings` for this GPU, unless the judge said they must not be kept; whether kept."""
    if ceilings.get("not_cached"):
        return False
    path = cache_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        table = json.loads(path.read_text())
    except (OSError, ValueError):
        table = {}
    table[key(device)] = {
        "ceilings": ceilings,
        "method": METHOD,
        "measured_at": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    path.write_text(json.dumps(table, indent=1))
    return True
