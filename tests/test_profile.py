"""The profile rung: Nsight Compute's report read through ncu_report into sections, rules, the
bottleneck and the excess traffic, and every way ncu can fail, with a stand-in `ncu` and a
stand-in `ncu_report` module (the real ones run in the gpu tests)."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import pytest

from rung.common import ncu
from rung.common.messages import JudgeHello
from rung.judge.ncu_sections import rules, sections
from rung.judge.ncu_summary import SUMMARY_LINES, bottleneck, interpret, replay_passes, summarize
from rung.judge.rungs.profile import profile
from rung.judge.session import Session
from rung.spec import Status
from tests.conftest import FIXTURES

EXPORT = FIXTURES / "ncu" / "export.json"
FAKE_MODULE = FIXTURES / "ncu" / "fake_module"


def _kernels() -> list[dict]:
    return json.loads(EXPORT.read_text())["kernels"]


def test_sections_read_every_figure_in_base_units():
    s = sections(_kernels()[0])
    assert s["speed_of_light"]["duration_ns"] == pytest.approx(2500)  # 2.5 usecond
    assert s["memory"]["dram_read_bytes"] == pytest.approx(32768)  # 32.768 Kbyte
    assert s["memory"]["dram_write_bytes"] == 16384 and s["memory"]["l2_hit_pct"] == 50.9
    assert list(s["warp_state"]["stalls"]) == ["long_scoreboard", "wait", "barrier"]  # most first
    assert s["occupancy"]["limit_registers_blocks"] == 2 and s["launch"]["registers"] == 26
    assert "sms" not in s["launch"]  # not collected: left out, not zero


def test_rules_that_fired_largest_estimated_speedup_first_oks_dropped():
    fired = rules(_kernels()[0])
    assert [r["rule"] for r in fired] == ["UncoalescedGlobalAccess", "AchievedOccupancy", "SOLBottleneck"]
    assert fired[0]["speedup_pct"] == 33.3 and fired[0]["title"] == "Uncoalesced Global Accesses"
    assert fired[1]["speedup_pct"] == 6.4  # read from the text the export left
    assert "speedup_pct" not in fired[2]


@pytest.mark.parametrize(
    ("sol", "says"),
    [
        ({"sm_pct": 21, "memory_pct": 93, "dram_pct": 93, "l2_pct": 40}, "memory-bound: DRAM at 93%"),
        ({"sm_pct": 21, "memory_pct": 80, "dram_pct": 20, "l2_pct": 80}, "memory-bound: L2 at 80%"),
        ({"sm_pct": 88, "memory_pct": 40}, "compute-bound: SM at 88%"),
        ({"sm_pct": 30, "memory_pct": 45}, "latency-bound: SM 30% and memory 45%"),
        ({"memory_pct": 50}, "no Speed Of Light"),
    ],
)
def test_bottleneck(sol, says):
    secs = {
        "speed_of_light": sol,
        "warp_state": {"stalls": {"barrier": 9.5}},
        "occupancy": {"achieved_pct": 12},
    }
    assert bottleneck(secs).startswith(says)
    if says.startswith("latency"):
        assert "stall most on barrier (waiting at a block barrier, 9.5 cycles per issue); occupancy 12%" in (
            bottleneck(secs)
        )


def test_kernels_group_their_launches_hottest_first():
    double, finish = summarize(_kernels())
    assert double["name"] == "double_kernel" and double["launches"] == 2 and double["total_us"] == 5.0
    assert double["dram_bytes"] == 2 * 49152 and double["dram_gbps"] == pytest.approx(49152 / 2500)
    assert double["reading"].startswith("memory-bound: DRAM at 84%") and double["occupancy_pct"] == 46.8
    assert finish["reading"].startswith("latency-bound") and "barrier" in finish["reading"]


def fake_ncu(tmp_path: Path, monkeypatch, body: str, module: Path | None = FAKE_MODULE) -> None:
    """An executable standing in for ncu: `body` runs with LOG bound to its --log-file and REPORT
    to its --export; `module`, the folder the judge finds ncu_report in (None: nowhere)."""
    exe = tmp_path / "ncu"
    exe.write_text(
        f"#!{sys.executable}\nimport sys, time\nLOG = sys.argv[sys.argv.index('--log-file') + 1]\n"
        "REPORT = sys.argv[sys.argv.index('--export') + 1]\n"
        "TARGET = sys.argv[sys.argv.index('--log-file') + 2 :]\n"
        "assert sys.argv[sys.argv.index('--set') + 1] == 'full'\n"
        f"assert sys.argv[sys.argv.index('--clock-control') + 1] == 'none'\n{body}\n"
    )
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setattr(ncu, "find", lambda: str(exe))
    monkeypatch.setattr(ncu, "python_module_dirs", lambda exe: [module] if module else [])


TINY = FIXTURES / "tiny"
# The profiled call's right answer (the tiny problem doubles its input), where the target would write it.
ANSWER = (
    "import torch; (x,) = torch.load(TARGET[-2]); open(TARGET[-1], 'wb').write((2 * x).numpy().tobytes())\n"
)


def run_profile(tmp_path: Path, timeout_s: float, solution: str = "good.py", source: str = ""):
    """The judge's profile rung on the tiny problem, as a judge process would run it."""
    session = Session(
        JudgeHello(
            **{
                "problem": str(TINY),
                "source": source or (TINY / "solutions" / solution).read_text(),
                "solution_name": solution,
                "run_dir": str(tmp_path / "run"),
                "seed": 3,
            }
        )
    )
    session.timeout_s = timeout_s
    return profile(session, {})


def test_the_report_is_read_through_ncu_report_into_a_summary_under_40_lines(tmp_path, monkeypatch):
    fake_ncu(tmp_path, monkeypatch, f"{ANSWER}import shutil; shutil.copy({str(EXPORT)!r}, REPORT)")
    r = run_profile(tmp_path, 30)
    assert r.status == Status.OK, r.message
    lines = r.message.splitlines()
    assert len(lines) < SUMMARY_LINES
    assert lines[0].startswith("3 launch(es) of 2 kernel(s) in one call of {'n': 4096}, hottest first; ")
    assert "bottleneck: double_kernel: memory-bound: DRAM at 84% of peak" in lines[0]
    # the tiny problem's cost model: 8 bytes per element, 32768 at n=4096; ncu saw 2 x 49152 + 0
    assert r.metrics["excess_traffic_x"] == pytest.approx(3.0) and "excess traffic x3.00" in lines[1]
    assert (
        "  rule UncoalescedGlobalAccess (est. speedup 33%): Uncoalesced Global Accesses: This kernel"
        in r.message
    )
    assert any(ln.startswith("  warp state: 36.7 cycles per issued instruction; stalls") for ln in lines)
    assert any(
        ln.startswith("  occupancy: achieved 47%, of theoretical 50%; limited by registers") for ln in lines
    )
    assert lines[-1].startswith("full report for ncu-ui: ") and lines[-1].endswith("report.ncu-rep")
    assert {Path(a).name for a in r.artifacts} >= {"report.ncu-rep", "report.json", "target.log"}


def triton_source(*kernels: str) -> str:
    return "import triton\n" + "".join(f"\n@triton.jit\ndef {k}(x):\n    pass\n" for k in kernels)


def test_the_kernels_ncu_saw_hold_one_the_solution_declared(tmp_path, monkeypatch):
    fake_ncu(tmp_path, monkeypatch, f"{ANSWER}import shutil; shutil.copy({str(EXPORT)!r}, REPORT)")
    r = run_profile(tmp_path, 30, source=triton_source("double_kernel"))
    assert r.status == Status.OK, r.message
    assert r.metrics["own_kernel"] == "seen"


@pytest.mark.parametrize(
    ("declared", "demangled"),
    [
        ("unlaunched", None),  # ncu saw double_kernel and finish_kernel, neither of them the solution's
        ("gemv2T_kernel_val", "void gemv2T_kernel_val<int, int, float, float, float, 128, 16, 4, 4>(float)"),
    ],
    ids=["another-kernel", "a-library-kernels-short-name"],
)
def test_no_kernel_of_the_solutions_among_those_ncu_saw_fails_profile(
    tmp_path, monkeypatch, declared, demangled
):
    """ncu's list is one the solution's process cannot write: guard's kernel_launched, asked again.
    A Python name can spell a templated library kernel's short one, never its full name."""
    kernels = _kernels()
    for k in kernels:
        k["name"] = declared if demangled else k["name"]
        k["demangled"] = demangled or k["name"]
    export = tmp_path / "export.json"
    export.write_text(json.dumps({"kernels": kernels}))
    fake_ncu(tmp_path, monkeypatch, f"{ANSWER}import shutil; shutil.copy({str(export)!r}, REPORT)")
    r = run_profile(tmp_path, 30, source=triton_source(declared))
    assert r.status == Status.FAILED, r.message
    assert r.message.startswith(
        "kernel_launched, as Nsight Compute saw the call from outside the solution's process: "
        "no triton kernel was launched during the call (only torch's: "
    ), r.message
    assert r.metrics["own_kernel"] == "missing"


NCU_LOG = """==WARNING== Note: Running with unmodified GPU clocks.
==PROF== Connected to process 541 (/usr/bin/python3.12)
==PROF== Profiling "double_kernel" - 0: 0%....50%....100% - 38 passes
==PROF== Profiling "double_kernel" - 1: 0%....50%....100% - 38 passes
==PROF== Profiling "sum_kernel" - 2: 0%....50%....100% - 1 pass
==PROF== Disconnected from process 541
"""


def test_where_the_profiles_time_went_is_in_its_figures_and_message(tmp_path, monkeypatch):
    assert replay_passes(NCU_LOG) == 77
    assert replay_passes(NCU_LOG.replace("==PROF== Profiling", "a kernel printed: ==PROF== Profiling")) == 0
    assert replay_passes("==PROF== Disconnected from process 541\n") == 0  # nothing replayed
    body = f"{ANSWER}import shutil; shutil.copy({str(EXPORT)!r}, REPORT); open(LOG, 'w').write({NCU_LOG!r})"
    fake_ncu(tmp_path, monkeypatch, body)
    r = run_profile(tmp_path, 30)
    assert r.status == Status.OK, r.message
    spent = r.metrics["spent"]
    assert spent["replay_passes"] == 77 and spent["ncu_s"] > 0 and spent["read_s"] > 0
    assert f"Nsight Compute: 77 replay passes in {spent['ncu_s']:.1f} s, the report read in" in r.message
    assert r.message.splitlines()[-1].startswith("full report for ncu-ui: ")


def test_without_ncu_report_the_report_is_kept_and_the_rung_says_so(tmp_path, monkeypatch):
    fake_ncu(
        tmp_path, monkeypatch, f"{ANSWER}import shutil; shutil.copy({str(EXPORT)!r}, REPORT)", module=None
    )
    r = run_profile(tmp_path, 30)
    assert r.status == Status.SKIPPED and "ncu_report" in r.message and "kept for ncu-ui" in r.message
    assert any(a.endswith("report.ncu-rep") for a in r.artifacts)


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


def test_the_target_calls_the_last_case_and_the_judge_checks_its_outputs(tmp_path, monkeypatch):
    """The stand-in runs the real target, confined (on the CPU, with no NVTX range to open): it
    loads the solution and the saved inputs of the last case, calls, and writes the outputs,
    which the judge compares with the reference (the ncu-aware cheat: test_time_defences.py)."""
    fake_ncu(
        tmp_path,
        monkeypatch,
        f"import shutil, subprocess\nshutil.copy({str(EXPORT)!r}, REPORT)\nsys.exit(subprocess.call(TARGET))",
    )
    r = run_profile(tmp_path, 120)
    assert r.status == Status.OK and r.metrics["profiled_call"] == "right", r.message


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


REAL_REPORT = FIXTURES / "ncu" / "softmax_full.ncu-rep"  # the H200's
REAL_EXPORT = FIXTURES / "ncu" / "softmax_full.json"  # bench/cut_fixtures.py, from that report


def _check_tuned_softmax(exported: dict) -> None:
    """What the tuned softmax's full report must read as (8192 x 8192 float32, one kernel)."""
    (k,) = summarize(exported["kernels"])
    assert k["name"] == "softmax_kernel" and k["launches"] == 1
    for section in ("speed_of_light", "memory", "compute", "scheduler", "warp_state", "occupancy", "launch"):
        assert k[section], section
    assert k["warp_state"]["stalls"] and k["launch"]["grid"] == 8192
    # The H200's report: L2 throughput 89% of peak, DRAM 82%, SM 21%: memory-bound, the busiest
    # level named (ncu's own bottleneck rule points at DRAM; its advice is among the rules)
    assert k["reading"].startswith("memory-bound: "), k["reading"]
    assert any("speedup_pct" in r for r in k["rules"]), k["rules"]
    r = interpret(exported, {"rows": 8192, "cols": 8192}, 2 * 8192 * 8192 * 4, ["report.ncu-rep"], 1.0)
    assert r.status == Status.OK and len(r.message.splitlines()) < SUMMARY_LINES
    assert 0.85 < r.metrics["excess_traffic_x"] < 1.3, r.metrics["excess_traffic_x"]


@pytest.mark.skipif(not REAL_EXPORT.exists(), reason="the H200's report is not yet exported to a fixture")
def test_the_real_report_of_the_tuned_softmax_reads_as_memory_bound():
    _check_tuned_softmax(json.loads(REAL_EXPORT.read_text()))


@pytest.mark.skipif(
    not (ncu.python_module_dirs(ncu.find()) and REAL_REPORT.exists()),
    reason="needs Nsight Compute's ncu_report module (a GPU machine) and the H200's report",
)
def test_the_exporter_reads_the_real_report_through_ncu_report(tmp_path):
    from rung.judge.rungs.profile import export

    exported, why = export(REAL_REPORT, tmp_path / "report.json", ncu.find() or "")
    assert exported is not None, why
    _check_tuned_softmax(exported)
