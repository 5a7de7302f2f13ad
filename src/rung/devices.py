"""The cache of measured device ceilings, one entry per GPU model and driver (controller side).

Ceilings are measured once (`rung device`, or on the first GPU run) and kept in
`RUNG_CACHE_DIR/devices.json` (default `~/.cache/rung/devices.json`).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from rung import knobs
from rung.spec import Device

METHOD = 4  # how the ceilings are measured; an entry measured another way is measured again
# (2: the DRAM ceiling is the faster of a copy and an add, not the copy alone; 3: l2_bytes kept;
# 4: the launch floor, launch_us and graph_replay_us)


def cache_path() -> Path:
    return knobs.cache_dir() / "devices.json"


def key(device: Device) -> str:
    return f"{device.name}|driver {device.driver}"


def cached(device: Device) -> dict[str, Any] | None:
    """The ceilings measured for this GPU model and driver, if measured the current way."""
    try:
        entry = json.loads(cache_path().read_text()).get(key(device))
    except (OSError, ValueError):
        return None
    return dict(entry["ceilings"]) if entry and entry.get("method") == METHOD else None


def remember(device: Device, ceilings: dict[str, Any]) -> None:
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
