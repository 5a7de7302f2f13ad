"""Capped logs with real children: a 32 MiB line, short output kept whole, no output, a grandchild."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time

from rung.common.logcap import CappedLog, last_words, tail_text

HEAD = TAIL = 256 * 1024


def run_child(log: CappedLog, code: str, new_session: bool = False) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        stdin=subprocess.DEVNULL,
        stdout=log.fileno(),
        stderr=log.fileno(),
        start_new_session=new_session,
    )
    log.close_writer()
    return proc


def test_a_32_mib_line_keeps_head_and_tail_and_counts_the_rest(tmp_path):
    size = 32 * 1024 * 1024
    code = f"import sys; sys.stdout.write('START' + 'x' * {size} + 'END')"
    log = CappedLog(tmp_path / "out.log", HEAD, TAIL)
    assert run_child(log, code).wait(timeout=30) == 0
    log.close()
    data = (tmp_path / "out.log").read_bytes()
    total = size + len("START") + len("END")
    assert log.dropped == total - HEAD - TAIL
    assert len(data) < HEAD + TAIL + 200
    assert data.startswith(b"START" + b"x" * (HEAD - 5))
    assert f"\n[rung: {log.dropped} bytes dropped]\n".encode() in data
    assert data.endswith(b"x" * (TAIL - 3) + b"END")
    text = tail_text(tmp_path / "out.log")
    assert len(text) < 4000
    assert text.startswith("START")  # three lines: the head, the marker, the tail; each cut to 500 chars
    assert f"\n[rung: {log.dropped} bytes dropped]\n" in text
    assert text.endswith(f"… [{TAIL - 500} chars cut]")


def test_short_output_is_kept_exactly(tmp_path):
    code = "import sys\nfor i in range(10): print('line', i, file=sys.stderr if i % 2 else sys.stdout)"
    log = CappedLog(tmp_path / "out.log")
    assert run_child(log, code).wait(timeout=30) == 0
    log.close()
    expected = "".join(f"line {i}\n" for i in range(10))
    assert (tmp_path / "out.log").read_text() == expected
    assert log.dropped == 0
    assert tail_text(tmp_path / "out.log") == expected.rstrip("\n")


def test_a_child_with_no_output_leaves_an_empty_log(tmp_path):
    fds_before = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else None
    log = CappedLog(tmp_path / "out.log")
    assert run_child(log, "pass").wait(timeout=30) == 0
    start = time.monotonic()
    log.close()
    assert time.monotonic() - start < 1
    assert (tmp_path / "out.log").read_bytes() == b""
    assert log.dropped == 0
    assert tail_text(tmp_path / "out.log") == ""
    if fds_before is not None:  # the pipe's two ends and the file are all closed
        assert len(os.listdir("/proc/self/fd")) == fds_before


def test_a_grandchild_holding_the_pipe_does_not_hold_close(tmp_path):
    code = (
        "import subprocess, sys\n"
        "print('before', flush=True)\n"
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
    )
    log = CappedLog(tmp_path / "out.log")
    proc = run_child(log, code, new_session=True)
    try:
        assert proc.wait(timeout=30) == 0
        start = time.monotonic()
        log.close(timeout_s=1)
        assert time.monotonic() - start < 2
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    assert (tmp_path / "out.log").read_text() == "before\n"
    assert not log._thread.is_alive()


def test_the_head_is_on_disk_while_the_child_runs(tmp_path):
    done = tmp_path / "done"
    code = (
        "import pathlib, sys, time\n"
        "sys.stdout.write('y' * 300000)\n"
        "sys.stdout.flush()\n"
        f"pathlib.Path({str(done)!r}).touch()\n"
        "time.sleep(60)\n"
    )
    log = CappedLog(tmp_path / "out.log", head_bytes=1000, tail_bytes=1000)
    proc = run_child(log, code)
    try:
        deadline = time.monotonic() + 10
        while not done.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert done.exists()
        assert (tmp_path / "out.log").read_bytes() == b"y" * 1000
    finally:
        proc.kill()
        proc.wait()
    log.close()
    assert log.dropped == 300000 - 2000
    assert (
        tmp_path / "out.log"
    ).read_bytes() == b"y" * 1000 + b"\n[rung: 298000 bytes dropped]\n" + b"y" * 1000


def test_close_is_idempotent_and_the_writer_is_gone_after_it(tmp_path):
    with CappedLog(tmp_path / "out.log", head_bytes=4, tail_bytes=4) as log:
        os.write(log.fileno(), b"abcdefghij\n")
    log.close()
    assert (tmp_path / "out.log").read_bytes() == b"abcd\n[rung: 3 bytes dropped]\nhij\n"
    try:
        log.fileno()
    except ValueError:
        pass
    else:
        raise AssertionError("fileno() after close should raise")


def test_nothing_is_kept_past_zero_bytes(tmp_path):
    with CappedLog(tmp_path / "out.log", head_bytes=0, tail_bytes=0) as log:
        os.write(log.fileno(), b"abc")
    assert (tmp_path / "out.log").read_bytes() == b"[rung: 3 bytes dropped]\n"


def test_tail_text_keeps_the_last_lines_and_cuts_long_ones(tmp_path):
    path = tmp_path / "log"
    path.write_text("".join(f"line {i}\n" for i in range(100)) + "z" * 600 + "\n\n")
    text = tail_text(path, max_lines=3, max_line_chars=500)
    assert text == "line 98\nline 99\n" + "z" * 500 + "… [100 chars cut]"
    assert tail_text(path, max_lines=3, max_line_chars=500, max_chars=520) == "z" * 500 + "… [100 chars cut]"
    assert tail_text(path, max_chars=10) == "chars cut]"
    assert tail_text(tmp_path / "missing") == ""


def test_tail_text_of_a_huge_uncapped_line_says_the_count_is_a_lower_bound(tmp_path):
    path = tmp_path / "log"
    path.write_bytes(b"q" * (3 * 1024 * 1024))
    text = tail_text(path)
    assert text == "q" * 500 + f"… [at least {1024 * 1024 - 500} chars cut]"


def test_a_dead_process_is_described_by_what_ended_it_not_torchs_parting_warning():
    warning = (
        "[W1206 09:18:26.946872635 CudaIPCTypes.cpp:16] Producer process has been terminated before "
        "all shared CUDA tensors released. See Note [Sharing CUDA tensors]"
    )
    traceback = 'Traceback (most recent call last):\n  File "s.py", line 3\ntorch.OutOfMemoryError: CUDA out of memory.'
    assert last_words(f"{traceback}\n{warning}\n") == "torch.OutOfMemoryError: CUDA out of memory."
    assert last_words(f"segment fault in cuLaunch\n{warning}") == "segment fault in cuLaunch"
    assert last_words(warning) == warning  # nothing else said: that is what there is
    assert last_words("\n\n") == ""
