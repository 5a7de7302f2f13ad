"""The store: WAL mode, runs written rung by rung, a killed run keeps what it did."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time

from rung.spec import Status
from rung.store import Store
from tests.conftest import FIXTURES


def test_store_is_sqlite_in_wal_mode(tmp_path):
    Store(tmp_path).close()
    db = sqlite3.connect(tmp_path / ".rung" / "rung.db")
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"problems", "solutions", "runs", "rungs"} <= tables


TINY = FIXTURES / "tiny"


def start_hanging_check(workspace):
    """`rung check` on a solution that hangs in `run`, in the background."""
    cmd = [
        sys.executable,
        "-m",
        "rung",
        "check",
        str(TINY),
        str(TINY / "solutions" / "hang.py"),
        "-w",
        str(workspace),
    ]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def test_a_killed_run_keeps_its_finished_rungs(tmp_path):
    proc = start_hanging_check(tmp_path)
    db_path = tmp_path / ".rung" / "rung.db"
    deadline = time.monotonic() + 120
    names: list[str] = []
    while time.monotonic() < deadline:
        if db_path.exists():
            try:
                names = [
                    r[0] for r in sqlite3.connect(db_path).execute("SELECT name FROM rungs ORDER BY idx")
                ]
            except sqlite3.OperationalError:
                names = []
            if "compile" in names:
                break
        time.sleep(0.2)
    time.sleep(1.0)  # now inside the hanging `run` rung
    proc.send_signal(signal.SIGKILL)
    proc.wait()

    store = Store(tmp_path)
    (run,) = store.runs()
    assert run.finished is None
    assert run.verdict == "UNFINISHED after compile"
    assert [r.name for r in run.rungs] == ["load", "compile"]
    assert run.rungs[0].status == Status.OK
    assert store.run(run.id).solution.sha256 == run.solution.sha256
    # A later run in the same store starts cleanly beside the unfinished one.
    assert run.id == 1
    out = subprocess.run(
        [sys.executable, "-m", "rung", "history", str(TINY), "-w", str(tmp_path)],
        capture_output=True,
        text=True,
    )
    assert "UNFINISHED after compile" in out.stdout


def test_worker_dies_with_a_killed_controller(tmp_path):
    proc = start_hanging_check(tmp_path)
    time.sleep(12)
    workers = _workers_of(proc.pid)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    time.sleep(1.0)
    for pid in workers:
        assert not _alive(pid), f"worker {pid} outlived its controller"


def _workers_of(parent: int) -> list[int]:
    out = subprocess.run(["ps", "-o", "pid=,ppid=", "-e"], capture_output=True, text=True).stdout
    return [int(p) for p, pp in (line.split() for line in out.splitlines()) if int(pp) == parent]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    state = subprocess.run(
        ["ps", "-o", "stat=", "-p", str(pid)], capture_output=True, text=True
    ).stdout.strip()
    return bool(state) and not state.startswith("Z")
