"""The profile rung: ncu's raw CSV read back, the readings, and every way ncu can fail, with a
stand-in `ncu` (the real one runs in the gpu tests)."""

from __future__ import annotations

import stat
import sys
from pathlib import Path

import pytest

from rung import ncu
from rung.judge.rungs.profile import profile
from rung.judge.session import Session
from rung.profile import reading
from rung.spec import Status
from tests.conftest import FIXTURES

RAW = (FIXTURES / "ncu" / "raw.csv").read_text()


def test_raw_csv_reads_one_dict_per_launch_in_base_units():
    launches = ncu.parse(RAW)
    assert [la["kernel"] for la in launches] == ["add_kernel", "add_kernel", "finish_kernel"]
    first = launches[0]
    assert first["duration_ns"] == 1_020_416 and first["dram_read_bytes"] == 2**31
    assert first["memory_pct"] == pytest.approx(93.1) and first["registers"] == 26
    assert ncu.parse("==PROF== Connected\n==ERROR== no kernels were profiled\n") == []


@pytest.mark.parametrize(
    ("sm", "memory", "says"),
    [(21, 93, "memory-bound"), (88, 40, "compute-bound"), (30, 45, "latency-bound"), (None, 50, "no Speed")],
)
def test_readings(sm, memory, says):
    assert reading(sm, memory).startswith(says)


def fake_ncu(tmp_path: Path, monkeypatch, body: str) -> None:
    """An executable standing in for ncu: `body` runs with LOG bound to its --log-file."""
    exe = tmp_path / "ncu"
    exe.write_text(
        f"#!{sys.executable}\nimport sys, time\nLOG = sys.argv[sys.argv.index('--log-file') + 1]\n"
        f"assert sys.argv[sys.argv.index('--clock-control') + 1] == 'none'\n{body}\n"
    )
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setattr(ncu, "find", lambda: str(exe))


TINY = FIXTURES / "tiny"


def run_profile(tmp_path: Path, timeout_s: float, solution: str = "good.py"):
    """The judge's profile rung on the tiny problem, as a judge process would run it."""
    session = Session(
        {
            "problem": str(TINY),
            "source": (TINY / "solutions" / solution).read_text(),
            "solution_name": solution,
            "run_dir": str(tmp_path / "run"),
            "seed": 3,
        }
    )
    session.timeout_s = timeout_s
    return profile(session, {})


def test_kernels_hottest_first_with_their_reading(tmp_path, monkeypatch):
    fake_ncu(tmp_path, monkeypatch, f"open(LOG, 'w').write({RAW!r})")
    r = run_profile(tmp_path, 30)
    assert r.status == Status.OK, r.message
    add, finish = r.metrics["kernels"]
    assert add["name"] == "add_kernel" and add["launches"] == 2 and add["total_us"] == pytest.approx(2030.528)
    assert add["dram_gbps"] == pytest.approx(3 * 2**30 / 1_015_264)  # median bytes over median time
    assert add["reading"].startswith("memory-bound") and finish["reading"].startswith("latency-bound")
    assert "add_kernel: 1015.3 us x2; memory-bound" in r.message
    assert any(a.endswith("ncu.csv") for a in r.artifacts)


def test_no_counter_permission_is_skipped_saying_so(tmp_path, monkeypatch):
    fake_ncu(
        tmp_path,
        monkeypatch,
        "open(LOG, 'w').write('==ERROR== ERR_NVGPUCTRPERM - no access\\n'); sys.exit(1)",
    )
    r = run_profile(tmp_path, 30)
    assert r.status == Status.SKIPPED and "ERR_NVGPUCTRPERM" in r.message


def test_ncu_failing_to_attach_to_the_confined_process_is_skipped_saying_so(tmp_path, monkeypatch):
    fake_ncu(
        tmp_path,
        monkeypatch,
        "print('==ERROR== Failed to profile \"softmax_kernel\" in process 936'); sys.exit(11)",
    )
    r = run_profile(tmp_path, 30)
    assert r.status == Status.SKIPPED
    assert r.message.startswith(
        "Nsight Compute could not profile the confined solution process: ==ERROR== Failed"
    )


def test_a_failing_call_is_an_error_with_its_last_words(tmp_path, monkeypatch):
    fake_ncu(tmp_path, monkeypatch, "print('RuntimeError: boom in custom_kernel'); sys.exit(1)")
    r = run_profile(tmp_path, 30)
    assert r.status == Status.ERROR and "exit code 1" in r.message and "boom in custom_kernel" in r.message


def test_a_hung_profile_is_killed(tmp_path, monkeypatch):
    fake_ncu(tmp_path, monkeypatch, "time.sleep(60)")
    r = run_profile(tmp_path, 1)
    assert r.status == Status.TIMEOUT and "killed" in r.message


def test_without_ncu_the_rung_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(ncu, "find", lambda: None)
    assert run_profile(tmp_path, 1).status == Status.SKIPPED


def test_the_target_loads_the_case_and_warms_up_before_its_nvtx_range(tmp_path, monkeypatch):
    """The stand-in runs the real target, confined. On the CPU it gets as far as opening the NVTX
    range, which needs a CUDA build: so the solution and the saved inputs of the last case loaded."""
    fake_ncu(
        tmp_path,
        monkeypatch,
        "import subprocess\nsys.exit(subprocess.call(sys.argv[sys.argv.index('--log-file') + 2:]))",
    )
    r = run_profile(tmp_path, 120)
    assert r.status == Status.ERROR and "NVTX functions not installed" in r.message, r.message


def test_the_profile_target_may_read_the_install_folder_of_every_library_injected_into_it(tmp_path):
    from rung.solution.profile_target import injected_roots

    ncu = tmp_path / "nsight-compute" / "2025.3.1"
    lib = ncu / "target" / "linux-desktop-x64" / "libInjection.so"
    lib.parent.mkdir(parents=True)
    lib.write_bytes(b"")
    other = tmp_path / "tools" / "libpreload.so.1"
    other.parent.mkdir()
    other.write_bytes(b"")
    env = {
        "CUDA_INJECTION64_PATH": str(lib),
        "LD_PRELOAD": f"{other} relative.so:{tmp_path / 'missing.so'}",
        "HOME": str(tmp_path),  # a folder, not a library: not granted
        "PATH": f"{tmp_path}:/usr/bin",
    }
    assert injected_roots(env) == [ncu, other.parent]
    assert injected_roots({"HOME": str(tmp_path)}) == []
