"""NVML's answers become the device record: the translation runs for real against a stand-in for
the pynvml module (the driver is what it replaces), and without NVML the record says why."""

from __future__ import annotations

import sys
import types

import pytest

from rung import runner
from rung.judge import clocks, gpu_facts
from rung.render import gpu_facts as render_facts
from rung.spec import Device


class NVMLError(Exception):
    pass


def fake_nvml(ecc=(1, 1), reasons=0x4 | 0x1, init_error=None, uuids=("GPU-abc",)):
    """A stand-in for pynvml with one H100-like GPU; it records what it was asked."""
    asked: list[str] = []

    def unsupported(*_):
        raise NVMLError("Not Supported")

    def init():
        asked.append("init")
        if init_error:
            raise NVMLError(init_error)

    def by_uuid(uuid):
        asked.append(uuid)
        if uuid not in uuids:
            raise NVMLError("Not Found")
        return "handle"

    clock = {1: 1755, 2: 2619}
    nvml = types.SimpleNamespace(
        NVMLError=NVMLError,
        asked=asked,
        nvmlInit=init,
        nvmlShutdown=lambda: asked.append("shutdown"),
        nvmlDeviceGetHandleByUUID=by_uuid,
        nvmlDeviceGetHandleByIndex=lambda i: asked.append(f"index {i}") or "handle",
        nvmlDeviceGetCount=lambda: 2,
        nvmlDeviceGetName=lambda h: b"NVIDIA H100 80GB HBM3",  # bytes, as bindings before 11.5 give
        nvmlDeviceGetUUID=lambda h: "GPU-abc",
        nvmlSystemGetDriverVersion=lambda: "580.159.04",
        nvmlDeviceGetClockInfo=lambda h, kind: clock[kind],
        nvmlDeviceGetMaxClockInfo=lambda h, kind: {1: 1980, 2: 2619}[kind],
        nvmlDeviceGetApplicationsClock=lambda h, kind: 1755,
        nvmlDeviceGetDefaultApplicationsClock=unsupported,
        nvmlDeviceGetCurrentClocksEventReasons=lambda h: reasons,
        nvmlDeviceGetPowerUsage=lambda h: 612_345,
        nvmlDeviceGetEnforcedPowerLimit=lambda h: 700_000,
        nvmlDeviceGetEccMode=(lambda h: list(ecc)) if ecc else unsupported,
        nvmlDeviceGetTotalEccErrors=lambda h, kind, counter: {0: 3, 1: 0}[kind],
    )
    return nvml


def test_nvml_answers_become_the_record_with_units_and_reason_names():
    nvml = fake_nvml()
    record = gpu_facts.read("abc", nvml)
    assert record == {
        "available": True,
        "name": "NVIDIA H100 80GB HBM3",
        "uuid": "GPU-abc",
        "driver": "580.159.04",
        "sm_mhz": 1755,
        "max_sm_mhz": 1980,
        "app_sm_mhz": 1755,
        "default_app_sm_mhz": None,
        "mem_mhz": 2619,
        "max_mem_mhz": 2619,
        "clock_reasons": ["gpu_idle", "sw_power_cap"],
        "power_w": 612.345,
        "power_limit_w": 700.0,
        "ecc_mode": "enabled",
        "ecc_corrected_volatile": 3,
        "ecc_uncorrected_volatile": 0,
        "unread": {"default_app_sm_mhz": "NVML: Not Supported"},
    }
    assert nvml.asked == ["init", "GPU-abc", "shutdown"]  # found by CUDA's UUID, NVML shut again


def test_ecc_off_or_unsupported_leaves_its_counts_unread_saying_why():
    off = gpu_facts.read("GPU-abc", fake_nvml(ecc=(0, 0)))
    assert off["ecc_mode"] == "disabled" and off["ecc_corrected_volatile"] is None
    assert off["unread"]["ecc_uncorrected_volatile"] == "ECC is disabled"
    unsupported = gpu_facts.read("GPU-abc", fake_nvml(ecc=None))
    assert unsupported["ecc_mode"] is None and unsupported["unread"]["ecc_mode"] == "NVML: Not Supported"
    assert unsupported["unread"]["ecc_corrected_volatile"] == "ECC is not readable"


def test_a_reason_bit_nvml_h_did_not_name_is_kept_as_hex():
    assert gpu_facts.reason_names(0) == []
    assert gpu_facts.reason_names(0x40 | 0x800) == ["hw_thermal_slowdown", "0x800"]


def test_without_nvml_the_record_says_why_and_nothing_raises(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml raises ImportError
    missing = gpu_facts.read()
    assert missing["available"] is False and "nvidia-ml-py is not installed" in missing["reason"]
    no_driver = fake_nvml(init_error="Driver Not Loaded")
    assert gpu_facts.read("abc", no_driver) == {
        "available": False,
        "reason": "NVML did not start: Driver Not Loaded",
    }
    other_gpu = fake_nvml()
    assert gpu_facts.read("GPU-zzz", other_gpu) == {
        "available": False,
        "reason": "NVML has no GPU GPU-zzz: Not Found",
    }
    assert other_gpu.asked[-1] == "shutdown"


def test_the_local_executor_counts_gpus_through_nvml_and_none_without_it():
    nvml = fake_nvml()
    assert gpu_facts.count(nvml) == 2 and nvml.asked == ["init", "shutdown"]
    assert gpu_facts.count(fake_nvml(init_error="Driver Not Loaded")) == 0


def test_the_installed_bindings_on_a_machine_without_a_driver_say_why():
    pytest.importorskip("pynvml")
    record = gpu_facts.read()
    if record["available"]:
        pytest.skip("this machine has an NVIDIA driver: tests/test_gpu.py reads it")
    assert record["reason"].startswith("NVML did not start: ")


def test_the_clock_reading_is_throttled_below_three_quarters_of_the_default_clock():
    record = gpu_facts.read("abc", fake_nvml())
    assert clocks.summary({**record, "default_app_sm_mhz": 1980})["throttled"] is False
    held = clocks.summary({**record, "sm_mhz": 1400, "default_app_sm_mhz": 1980})
    assert held["throttled"] is True and held["clock_reasons"] == ["gpu_idle", "sw_power_cap"]
    assert clocks.summary(record)["throttled"] is False  # no default clock read: not called throttled
    assert clocks.summary(gpu_facts.unavailable("no driver")) == {"error": "no clock reading: no driver"}


def test_rung_device_shows_each_fact_or_why_there_are_none():
    from rich.console import Console

    def shown(facts):
        console = Console(width=120, record=True)
        console.print(render_facts(facts))
        return console.export_text()

    text = shown(gpu_facts.read("abc", fake_nvml()))
    assert "gpu_idle, sw_power_cap" in text and "NVML: Not Supported" in text and "612" in text
    assert shown(gpu_facts.unavailable("no driver")).strip() == "NVML: unavailable (no driver)"


def test_a_device_record_stored_before_nvml_was_read_still_loads():
    old = {"kind": "cuda", "name": "NVIDIA H200", "arch": "sm_90", "memory_bytes": 1, "driver": "x"}
    assert Device(**old).nvml == {}


def test_a_cpu_run_records_that_nvml_was_not_read_and_why(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA device is here: tests/test_gpu.py reads NVML's record")
    dev = runner.probe_device(tmp_path)
    assert dev.kind == "cpu"
    assert dev.nvml == {"available": False, "reason": "no CUDA device in this judge: the run is on the CPU"}
