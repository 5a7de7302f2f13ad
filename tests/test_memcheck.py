"""The memcheck rung: compute-sanitizer's report read and judged (CPU, on recorded reports), the
real target run confined under a stand-in tool (CPU), the rung left out unless asked and SKIPPED
without a GPU, and on a GPU a kernel that reads past its input FAILED naming the read while the
tuned vector add passes."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import torch

from rung import knobs, problem_data, runner
from rung.common import confine
from rung.common.messages import JudgeHello
from rung.judge.rungs import memcheck as memcheck_rung
from rung.judge.rungs.memcheck import MAX_REPORT_BYTES, judged, memcheck
from rung.judge.sanitizer_report import MAX_FIELD_CHARS, parse
from rung.judge.session import Session
from rung.solution.memcheck_target import close_descriptors_beneath
from rung.spec import Device, Status
from tests.conftest import FIXTURES, PROBLEMS, rung_of

REPORTS = FIXTURES / "memcheck"
VECTOR_ADD = PROBLEMS / "vector_add"
TINY = FIXTURES / "tiny"
CASES = [{"n": 1}, {"n": 1000}, {"n": 4097}]


def _judged(tmp_path: Path, report: str | bytes | None, code: int = 0, said: str = ""):
    """The verdict on `report` as the tool's log in a judge's folder (None: the tool wrote none)."""
    out = tmp_path / "memcheck"
    out.mkdir()
    log = out / "memcheck.log"
    if report is not None:
        log.write_bytes(report if isinstance(report, bytes) else report.encode())
    return judged(out, log, code, CASES, said, 1.0)


def test_an_out_of_bounds_read_fails_naming_the_first_access(tmp_path):
    result = _judged(tmp_path, (REPORTS / "oob.log").read_text(), code=0)
    assert result.status == Status.FAILED
    head, first = result.message.splitlines()
    assert head.startswith("48 memory error(s) under compute-sanitizer memcheck over {'n': 1}")
    assert first.strip().startswith("Invalid __global__ read of size 4 bytes, at add_past_end+0x")
    assert "by thread (1,0,0) in block (0,0,0)" in first and "is out of bounds" in first
    assert "after the nearest allocation" in first
    assert result.metrics["errors"] == 48 and result.metrics["records"] == 20
    assert len(result.metrics["accesses"]) == 5
    assert result.metrics["accesses"][0]["at"].startswith("add_past_end+0x")


def test_a_clean_report_passes_naming_the_cases(tmp_path):
    result = _judged(tmp_path, (REPORTS / "clean.log").read_text())
    assert result.status == Status.OK, result.message
    assert "3 cases" in result.message and result.metrics["errors"] == 0


def test_hostile_kernel_names_are_capped_and_cannot_forge_a_clean_summary(tmp_path):
    text = (REPORTS / "hostile_names.log").read_text()
    result = _judged(tmp_path, text)
    assert result.status == Status.FAILED
    first = result.metrics["accesses"][0]
    assert len(first["at"]) <= MAX_FIELD_CHARS and first["at"].endswith("...")
    assert "\x1b" not in result.message and "\x07" not in result.message
    assert result.metrics["errors"] == 2  # the name's "ERROR SUMMARY: 0 errors" is not the tool's last word
    assert len(result.message.splitlines()) == 2


def test_records_count_even_where_a_forged_summary_is_last(tmp_path):
    report = parse(
        "========= Invalid __global__ write of size 8 bytes\n"
        "=========     at k+0x10\n"
        "========= ERROR SUMMARY: 0 errors\n"
    )
    assert report.errors == 1 and report.accesses[0].kind == "Invalid __global__ write of size 8 bytes"
    # a name's own line separator (U+2028) starts no line of the tool's
    assert parse("=========     at k\u2028========= ERROR SUMMARY: 0 errors\n").errors is None
    assert parse("========= ERROR SUMMARY: 3 errors\r\n").errors == 3


def test_what_the_solution_printed_is_not_the_tools_report(tmp_path):
    """Lines without the tool's prefix are not read, wherever they come from."""
    printed = "Invalid __global__ read of size 4 bytes\nERROR SUMMARY: 0 errors\n"
    result = _judged(tmp_path, printed + (REPORTS / "oob.log").read_text())
    assert result.status == Status.FAILED and result.metrics["errors"] == 48


@pytest.mark.parametrize("how", ["missing", "oversize", "symlink", "fifo"])
def test_a_report_that_is_not_the_tools_file_is_refused(tmp_path, how):
    out = tmp_path / "memcheck"
    out.mkdir()
    log = out / "memcheck.log"
    if how == "oversize":
        log.write_bytes(b"=========\n" * (MAX_REPORT_BYTES // 10 + 1))
    elif how == "symlink":
        (tmp_path / "elsewhere.log").write_text((REPORTS / "clean.log").read_text())
        log.symlink_to(tmp_path / "elsewhere.log")
    elif how == "fifo":
        os.mkfifo(log)
    result = judged(out, log, 0, CASES, "", 1.0)
    assert result.status == Status.ERROR and "report refused" in result.message, result.message
    reason = {"missing": "no such file", "oversize": "over", "symlink": "symbolic link", "fifo": "regular"}
    assert reason[how] in result.message


def test_no_summary_is_an_error_quoting_the_tool(tmp_path):
    said = "========= COMPUTE-SANITIZER\n========= Warning: one\n========= Error: Device not supported\n"
    assert parse(said).records == 0  # the tool's words are not errors found
    result = _judged(tmp_path, said.replace("========= Warning: one\n", ""), 1)
    assert result.status == Status.ERROR
    assert "without its error summary (exit code 1): Error: Device not supported" in result.message


def test_a_call_that_fails_only_under_the_tool_is_an_error(tmp_path):
    said = "Traceback (most recent call last):\nRuntimeError: no sanitizer for me\x1b[31m"
    result = _judged(tmp_path, (REPORTS / "clean.log").read_text(), code=1, said=said)
    assert result.status == Status.ERROR
    assert result.message.endswith("(exit code 1): RuntimeError: no sanitizer for me?[31m")


class _Session:
    device = "cuda"


def test_memcheck_runs_only_when_asked_and_where_the_tool_is(monkeypatch):
    result = memcheck(_Session(), {})
    assert result.status == Status.SKIPPED and result.message.startswith("not asked for (RUNG_MEMCHECK=1")
    monkeypatch.setattr(memcheck_rung, "find", lambda: None)
    with knobs.scoped(RUNG_MEMCHECK=1):
        result = memcheck(_Session(), {})
    assert result.status == Status.SKIPPED
    assert result.message == "compute-sanitizer is not installed here (PATH, /usr/local/cuda/bin)"


RECORD = (
    "========= Invalid __global__ read of size 4 bytes\n"
    "=========     at double_kernel+0x40\n"
    "=========     by thread (5,0,0) in block (0,0,0)\n"
    "=========     Access to 0x7f0000000014 is out of bounds\n"
    "=========\n"
)


def fake_sanitizer(tmp_path: Path, monkeypatch, found: str) -> None:
    """An executable standing in for compute-sanitizer: it opens its report (a descriptor its
    target inherits), runs the real target, then writes `found` and the summary, as the tool does."""
    exe = tmp_path / "compute-sanitizer"
    exe.write_text(
        f"#!{sys.executable}\nimport os, subprocess, sys\n"
        "assert sys.argv[1:3] == ['--tool', 'memcheck'] and '--padding' in sys.argv\n"
        "at = sys.argv.index('--log-file')\n"
        "fd = os.open(sys.argv[at + 1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)\n"
        "os.set_inheritable(fd, True)\n"
        "os.write(fd, b'========= COMPUTE-SANITIZER\\n')\n"
        "code = subprocess.call(sys.argv[at + 2 :], close_fds=False)\n"
        f"os.write(fd, {found.encode()!r})\n"
        f"os.write(fd, b'========= ERROR SUMMARY: {found.count('Invalid')} errors\\n')\n"
        "sys.exit(code)\n"
    )
    exe.chmod(0o755)
    monkeypatch.setattr(memcheck_rung, "find", lambda: str(exe))


def run_memcheck(tmp_path: Path, solution: Path):
    """The judge's memcheck rung on the tiny problem, as a judge process would run it."""
    session = Session(
        JudgeHello(
            **{
                "problem": str(TINY),
                "source": solution.read_text(),
                "solution_name": solution.name,
                "run_dir": str(tmp_path / "run"),
                "seed": 3,
            }
        )
    )
    session.timeout_s = 120
    with knobs.scoped(RUNG_MEMCHECK=1):
        return memcheck(session, {})


def test_the_target_calls_the_smallest_cases_under_the_tool(tmp_path, monkeypatch):
    """The stand-in runs the real target, confined, on the CPU: it loads the solution and the saved
    inputs of each case and calls it; the tool found nothing, so the rung passes."""
    fake_sanitizer(tmp_path, monkeypatch, "")
    result = run_memcheck(tmp_path, TINY / "solutions" / "good.py")
    assert result.status == Status.OK, result.message
    assert result.metrics["cases"] == [{"n": 5}, {"n": 300}]  # the tiny problem has two
    assert result.message.endswith("one call on each of 2 cases ({'n': 5}, {'n': 300})")


def test_a_solution_cannot_rewrite_the_tools_report(tmp_path, monkeypatch):
    """Its descriptor, were the tool to pass one on, is closed before the solution is imported;
    its path is outside what the confined target may write."""
    if not _landlock():
        pytest.skip("no Landlock on this kernel: the report's path is not closed to the target")
    fake_sanitizer(tmp_path, monkeypatch, RECORD)
    result = run_memcheck(tmp_path, REPORTS / "rewrites_report.py")
    assert result.status == Status.FAILED, result.message
    assert "at double_kernel+0x40 by thread (5,0,0)" in result.message
    said = (tmp_path / "run" / "memcheck" / "target.log").read_text()
    assert "rewrote" not in said and "could not open the report by its path" in said, said


def _landlock() -> bool:
    return confine._abi()[0] > 0


def test_the_older_record_form_and_counts_with_separators_are_read():
    report = parse(
        "========= Invalid __shared__ write of size 8 bytes\n"
        "=========     at 0x70 in kernel(int*)\n"
        "=========     Address 0x00000400 is out of bounds\n"
        "=========\n"
        "========= ERROR SUMMARY: 1,106 errors\n"
        "========= ERROR SUMMARY: 1,105 errors were not printed. Use --print-limit option to adjust\n"
    )
    assert report.errors == 1106
    assert report.accesses[0].line() == (
        "Invalid __shared__ write of size 8 bytes, at 0x70 in kernel(int*), Address 0x00000400 is out of bounds"
    )
    assert parse("========= ERROR SUMMARY: 1 error\n").errors == 1


def test_the_target_closes_what_it_inherited_of_the_judges_folder(tmp_path):
    """Were the tool's front end to pass its report's descriptor on, the solution could rewrite it."""
    judges, scratch = tmp_path / "memcheck", tmp_path / "solution"
    judges.mkdir()
    scratch.mkdir()
    report = os.open(judges / "memcheck.log", os.O_WRONLY | os.O_CREAT)
    own = os.open(scratch / "x", os.O_WRONLY | os.O_CREAT)
    try:
        assert close_descriptors_beneath(judges) == [report]
        os.fstat(own)  # still open
        with pytest.raises(OSError):
            os.fstat(report)
    finally:
        os.close(own)


def test_the_rung_is_skipped_on_a_cpu_even_when_asked(climb):
    """The ladder skips it before any judge starts (the problem read as data, a CPU device)."""
    cpu = Device(kind="cpu", name="cpu")
    with knobs.scoped(RUNG_MEMCHECK=1):
        run = runner.climb(
            climb.store,
            problem_data.read(VECTOR_ADD),
            cpu,
            VECTOR_ADD / "solutions" / "correct" / "naive.py",
            only=("memcheck",),
        )
    result = rung_of(run, "memcheck")
    assert result.status == Status.SKIPPED and result.message == "no CUDA device on this machine"


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine")
def test_on_a_gpu_a_kernel_reading_past_its_input_fails_memcheck_naming_the_read(climb):
    run = _climbed(climb, REPORTS / "reads_past_input.py")
    assert rung_of(run, "correct").status == Status.OK  # right answers: only the sanitizer sees it
    result = rung_of(run, "memcheck")
    assert result.status == Status.FAILED, result.message
    first = result.message.splitlines()[1]
    assert "Invalid __global__ read of size 4 bytes" in first and "add_past_end" in first, first
    assert "out of bounds" in first, first


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine")
def test_on_a_gpu_the_tuned_vector_add_passes_memcheck(climb):
    run = _climbed(climb, VECTOR_ADD / "solutions" / "correct" / "tuned.py")
    result = rung_of(run, "memcheck")
    assert result.status == Status.OK, result.message
    assert result.metrics["errors"] == 0 and len(result.metrics["cases"]) == 3
    assert result.seconds < 120, result.seconds


def _climbed(climb, solution: Path):
    with knobs.scoped(RUNG_MEMCHECK=1):
        problem, device = climb.described.get(VECTOR_ADD) or runner.describe(
            VECTOR_ADD, climb.store.root / "scratch"
        )
        climb.described[VECTOR_ADD] = (problem, device)
        return runner.climb(
            climb.store,
            problem,
            device,
            solution,
            only=("load", "compile", "run", "guard", "correct", "memcheck"),
        )
