"""The store: WAL mode, runs written rung by rung, a killed run keeps what it did, an interrupted
run says so, migrations under one lock, and a damaged or lost store refused in one line."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from rung import migrations, optimize
from rung.errors import StoreError, UsageError
from rung.migrations import LATEST, MIGRATIONS, PROPOSAL_COLUMNS, SCHEMA_SQL
from rung.spec import Device, Run, RungResult, Solution, Status
from rung.store import Store
from tests.conftest import FIXTURES, PROBLEMS


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


def begin_run(store: Store, source: Path, problem: str = "tiny") -> Run:
    return store.begin(problem, "problems/tiny", Solution.from_file(source), Device("cpu", "cpu"), 0, {})


def bench(median_ms: float) -> RungResult:
    return RungResult("bench", Status.OK, metrics={"cases": [{"median_ms": median_ms, "rel_sem": 0.01}]})


def test_interrupt_finishes_a_run_that_says_interrupted_and_never_passes(tmp_path):
    store = Store(tmp_path)
    run = begin_run(store, TINY / "solutions" / "hang.py")
    store.add_rung(run, RungResult("load", Status.OK))
    store.add_rung(run, RungResult("bench", Status.INTERRUPTED, "stopped by SIGINT"))
    store.interrupt(run)

    assert Status.INTERRUPTED.bad
    assert run.verdict == "INTERRUPTED after bench"
    assert not run.ok
    row = store.db.execute("SELECT finished, ok, interrupted FROM runs WHERE id=?", (run.id,)).fetchone()
    assert row[0] is not None
    assert row[1:] == (0, 1)
    stored = store.run(run.id)
    assert stored.verdict == "INTERRUPTED after bench"
    assert [r.status for r in stored.rungs] == [Status.OK, Status.INTERRUPTED]
    result = json.loads((store.run_dir(run.id) / "result.json").read_text())
    assert result["verdict"] == "INTERRUPTED after bench"
    assert result["ok"] is False


def test_a_run_interrupted_between_rungs_gets_a_rung_that_says_so(tmp_path):
    store = Store(tmp_path)
    run = begin_run(store, TINY / "solutions" / "hang.py")
    store.add_rung(run, RungResult("load", Status.OK))
    store.interrupt(run)
    assert store.run(run.id).verdict == "INTERRUPTED after stop"


def test_optimize_resumes_only_from_a_finished_passing_run(tmp_path):
    store = Store(tmp_path)
    solutions = PROBLEMS / "vector_add" / "solutions" / "correct"
    passed = begin_run(store, solutions / "naive.py")
    checked = [RungResult(n, Status.OK) for n in ("load", "run", "guard", "correct", "scale")]  # verified
    for rung in (*checked, bench(2.0)):
        store.add_rung(passed, rung)
    store.finish(passed)
    stopped = begin_run(store, solutions / "tuned.py")  # faster, but a person stopped it
    for rung in (RungResult("load", Status.OK), bench(1.0), RungResult("profile", Status.INTERRUPTED)):
        store.add_rung(stopped, rung)
    store.interrupt(stopped)
    killed = begin_run(store, solutions / "torch_add.py")  # fastest, but its climb never finished
    for rung in (RungResult("load", Status.OK), bench(0.5)):
        store.add_rung(killed, rung)

    problem = SimpleNamespace(name="tiny")
    events: list[dict] = []
    best = optimize._start(store, problem, None, None, events.append)
    assert best.id == passed.id
    assert events == [{"event": "resume", "run": passed.id, "path": passed.solution.path}]
    assert [optimize.resumable(r) for r in store.runs("tiny")] == [True, False, False]

    store.db.execute("DELETE FROM rungs WHERE run_id=?", (passed.id,))
    store.db.execute("DELETE FROM runs WHERE id=?", (passed.id,))
    store.db.commit()
    with pytest.raises(UsageError, match="no passing version of tiny"):
        optimize._start(store, problem, None, None, events.append)


def open_store_when_all_are_ready(workspace: Path, ready: Any, said: Any) -> None:
    """In a spawned process: wait for the others, then open the store at the same moment."""
    ready.wait()
    try:
        Store(workspace).close()
        said.put("ok")
    except Exception as e:
        said.put(f"{type(e).__name__}: {e}")


def columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in db.execute(f"PRAGMA table_info({table})")}


def assert_schema_is_current(db_path: Path) -> None:
    db = sqlite3.connect(db_path)
    assert db.execute("PRAGMA user_version").fetchone()[0] == LATEST
    assert set(PROPOSAL_COLUMNS) <= columns(db, "proposals")
    assert "interrupted" in columns(db, "runs")
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    db.close()


def test_eight_processes_open_a_new_store_at_once(tmp_path):
    ctx = multiprocessing.get_context("spawn")
    ready, said = ctx.Barrier(8), ctx.Queue()
    procs = [
        ctx.Process(target=open_store_when_all_are_ready, args=(tmp_path, ready, said)) for _ in range(8)
    ]
    for p in procs:
        p.start()
    answers = [said.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    assert answers == ["ok"] * 8
    assert_schema_is_current(tmp_path / ".rung" / "rung.db")


def test_a_store_of_the_first_release_migrates(tmp_path):
    db_path = tmp_path / ".rung" / "rung.db"
    db_path.parent.mkdir()
    db = sqlite3.connect(db_path)
    db.executescript(SCHEMA_SQL)
    db.execute("ALTER TABLE proposals ADD COLUMN run_id INTEGER")  # one column a later release added
    db.execute(
        "INSERT INTO runs (problem, solution, path, device, seed, environment, started)"
        " VALUES ('tiny', 'abc', 'v1.py', '{}', 0, '{}', 1.0)"
    )
    db.commit()
    db.close()

    Store(tmp_path).close()
    assert_schema_is_current(db_path)
    db = sqlite3.connect(db_path)
    assert db.execute("SELECT id, problem, interrupted FROM runs").fetchall() == [(1, "tiny", None)]
    db.close()
    Store(tmp_path).close()  # at the current version: nothing left to apply
    assert_schema_is_current(db_path)


def test_a_store_from_a_newer_rung_is_refused(tmp_path):
    Store(tmp_path).close()
    db = sqlite3.connect(tmp_path / ".rung" / "rung.db")
    db.execute(f"PRAGMA user_version = {LATEST + 1}")
    db.close()
    with pytest.raises(StoreError, match="written by a newer rung"):
        Store(tmp_path)


def schema(db_path: Path) -> list[tuple[str, str]]:
    """Every table and index and its columns, as a store at its version has them."""
    db = sqlite3.connect(db_path)
    names = [
        n
        for (n,) in db.execute("SELECT name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name")
    ]
    out = [(n, ",".join(r[1] for r in db.execute(f"PRAGMA table_info({n})"))) for n in names]
    db.close()
    return out


def test_migrations_are_numbered_one_to_n_in_order_and_say_what_they_do():
    assert [m.number for m in MIGRATIONS] == list(range(1, len(MIGRATIONS) + 1)) and len(MIGRATIONS) == LATEST
    assert all(m.what for m in MIGRATIONS)


@pytest.mark.parametrize("version", range(LATEST))
def test_a_store_at_each_version_migrates_to_what_a_new_store_is(tmp_path, version):
    fresh = tmp_path / "fresh"
    with Store(fresh):
        pass
    old = tmp_path / "old" / ".rung" / "rung.db"
    old.parent.mkdir(parents=True)
    db = sqlite3.connect(old)
    for step in MIGRATIONS[:version]:  # the store as a rung that knew `version` migrations left it
        migrations._execute(db, step.apply) if isinstance(step.apply, str) else step.apply(db)
    db.execute(f"PRAGMA user_version = {version}")
    db.commit()
    db.close()
    with Store(old.parent.parent) as store:
        assert migrations.version(store.db) == LATEST
    assert schema(old) == schema(fresh / ".rung" / "rung.db")


def test_a_migration_that_fails_leaves_the_store_as_it_was(tmp_path, monkeypatch):
    with Store(tmp_path):
        pass
    db_path = tmp_path / ".rung" / "rung.db"
    before = schema(db_path)
    broken = migrations.Migration(
        LATEST + 1, "fails halfway", "CREATE TABLE t (x);SELECT nonsense FROM nowhere"
    )
    monkeypatch.setattr(migrations, "MIGRATIONS", (*MIGRATIONS, broken))
    monkeypatch.setattr(migrations, "LATEST", LATEST + 1)
    with pytest.raises(StoreError, match="no such table: nowhere"):
        Store(tmp_path)
    db = sqlite3.connect(db_path)
    assert db.execute("PRAGMA user_version").fetchone()[0] == LATEST and schema(db_path) == before
    db.close()


def test_the_store_closes_when_its_block_ends_however_it_ends(tmp_path):
    with pytest.raises(RuntimeError), Store(tmp_path) as store:
        raise RuntimeError("a failure inside the block")
    with pytest.raises(sqlite3.ProgrammingError, match="closed"):
        store.db.execute("SELECT 1")


def garbage(db_path: Path) -> None:
    db_path.write_bytes(bytes(range(7, 107)))


def half(db_path: Path) -> None:
    data = db_path.read_bytes()
    db_path.write_bytes(data[: len(data) // 2])


@pytest.mark.parametrize(
    ("damage", "why"), [(garbage, "file is not a database"), (half, "database disk image is malformed")]
)
def test_an_unreadable_store_is_refused_in_one_line_and_left_as_it_is(tmp_path, damage, why):
    store = Store(tmp_path)
    run = begin_run(store, TINY / "solutions" / "hang.py")
    store.add_rung(run, RungResult("load", Status.OK, "x" * 20_000))  # pages beyond the first
    store.finish(run)
    store.close()
    db_path = tmp_path / ".rung" / "rung.db"
    damage(db_path)
    damaged = db_path.read_bytes()

    with pytest.raises(StoreError) as caught:
        Store(tmp_path)
    assert str(caught.value) == (
        f"{db_path} is not a readable rung store ({why}); move it aside to start a new store,"
        " or restore it from a copy"
    )
    assert db_path.read_bytes() == damaged
    assert sorted(p.name for p in (tmp_path / ".rung" / "runs").iterdir()) == ["1"]

    done = subprocess.run(
        [sys.executable, "-m", "rung", "history", "tiny", "-w", str(tmp_path)], capture_output=True, text=True
    )
    assert done.returncode == 2
    assert done.stderr == f"rung: error: {caught.value}\n"


def test_a_lost_store_beside_run_folders_is_refused(tmp_path):
    store = Store(tmp_path)
    store.finish(begin_run(store, TINY / "solutions" / "hang.py"))
    store.close()
    db_path = tmp_path / ".rung" / "rung.db"
    db_path.unlink()
    for emptied in (False, True):
        if emptied:
            db_path.write_bytes(b"")
        with pytest.raises(StoreError, match=r"rung.db is missing or empty but .* holds runs"):
            Store(tmp_path)
        assert db_path.exists() == emptied


def test_a_run_never_reuses_a_folder_the_store_does_not_know(tmp_path):
    store = Store(tmp_path)
    (tmp_path / ".rung" / "runs" / "1").mkdir(parents=True)  # left by an older copy of rung.db
    with pytest.raises(StoreError, match=r"runs/1 already holds a run"):
        begin_run(store, TINY / "solutions" / "hang.py")
    assert store.runs() == []
