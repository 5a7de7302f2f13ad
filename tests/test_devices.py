"""The ceilings cache: one entry per GPU model and driver, measured again when the method changes."""

from __future__ import annotations

import json

from rung import devices
from rung.spec import Device

H200 = Device(kind="cuda", name="NVIDIA H200", arch="sm_90", driver="580.159.04")


def test_remembered_ceilings_come_back_for_the_same_model_and_driver(tmp_path, monkeypatch):
    monkeypatch.setenv("RUNG_CACHE_DIR", str(tmp_path))
    devices.remember(H200, {"dram_gbps": 4400.0})
    assert devices.cached(H200) == {"dram_gbps": 4400.0}
    other_driver = Device(kind="cuda", name="NVIDIA H200", arch="sm_90", driver="590.1")
    assert devices.cached(other_driver) is None


def test_ceilings_measured_another_way_are_measured_again(tmp_path, monkeypatch):
    monkeypatch.setenv("RUNG_CACHE_DIR", str(tmp_path))
    old = {devices.key(H200): {"ceilings": {"dram_gbps": 4289.0}, "measured_at": "2026-12-03 10:00:00"}}
    (tmp_path / "devices.json").write_text(json.dumps(old))
    assert devices.cached(H200) is None
