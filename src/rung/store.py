"""The workspace store: `.rung/rung.db` (SQLite, WAL) and `.rung/runs/<id>/` for artifacts.

Problems, solutions (by content hash, with their source), runs and rungs. A run row is written
when the climb starts and every rung is committed as it ends, so a run killed halfway keeps what
it did; its `finished` stays empty. A run a person stopped is finished with `interrupted` set.

The schema is rung.migrations': numbered, applied on opening where the store lacks them. A store
that cannot be read (not a database, truncated) is refused with a StoreError, never replaced. So
is a missing or empty `rung.db` beside run folders: numbering runs from 1 again would write into
folders that hold earlier runs. Nor does a run reuse a folder that is already there (an older
copy of `rung.db` put back): that run is refused.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rung import knobs
from rung.errors import StoreError
from rung.migrations import migrate
from rung.spec import Device, Run, RungResult, Solution, Status

if TYPE_CHECKING:
    from rung.agents import Proposal

BUSY_TIMEOUT_S = 30  # how long an opener or writer waits for another's write lock


def use_wal(db: sqlite3.Connection) -> None:
    """Put the store in WAL mode (it stays so). The switch needs the file to itself, and sqlite
    answers "locked" at once rather than wait on the busy timeout (two openers would deadlock):
    8 processes opening a new store at once failed so 3 times in 160, so it is retried."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
        try:
            db.execute("PRAGMA journal_mode=WAL")
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def find_workspace(start: Path | None = None) -> Path:
    """RUNG_WORKSPACE, else the nearest folder upwards holding `.rung/`, else the current folder."""
    configured = str(knobs.get("RUNG_WORKSPACE"))
    if configured:
        return Path(configured).resolve()
    here = (start or Path.cwd()).resolve()
    return _nearest_workspace(here) or here


def existing_workspace(workspace: Path | None = None, start: Path | None = None) -> Path:
    """The workspace a read-only command reads: `workspace`, else RUNG_WORKSPACE, else the nearest
    folder upwards holding `.rung/`; it must hold one, for reading creates nothing. A StoreError
    says where it looked."""
    configured = workspace or (
        Path(str(knobs.get("RUNG_WORKSPACE"))) if knobs.get("RUNG_WORKSPACE") else None
    )
    if configured is not None:
        if not (configured / ".rung").is_dir():
            raise StoreError(f"no rung workspace: {configured.resolve()} holds no .rung/")
        return configured.resolve()
    here = (start or Path.cwd()).resolve()
    found = _nearest_workspace(here)
    if found is None:
        raise StoreError(
            f"no rung workspace: no .rung/ in {here} or any folder above it"
            " (rung check or rung init makes one; --workspace or RUNG_WORKSPACE names one)"
        )
    return found


def _nearest_workspace(here: Path) -> Path | None:
    return next((f for f in (here, *here.parents) if (f / ".rung").is_dir()), None)


class Store:
    """A workspace's store, open until closed: `with Store(workspace) as store:` closes it however
    the block ends."""

    def __init__(self, workspace: Path) -> None:
        self.root = workspace / ".rung"
        path = self.root / "rung.db"
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            if (not path.exists() or path.stat().st_size == 0) and self._has_run_folders():
                raise StoreError(
                    f"{path} is missing or empty but {self.root / 'runs'} holds runs: restore rung.db"
                    " from a copy, or move .rung/runs aside to start a new store"
                )
            self.db = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S)
        except OSError as e:
            raise StoreError(f"cannot open the store in {self.root}: {e}") from None
        try:
            use_wal(self.db)
            migrate(self.db, path)
        except BaseException as e:
            self.db.close()
            # Exactly DatabaseError is what sqlite3 raises for SQLITE_NOTADB and SQLITE_CORRUPT;
            # its subclasses are locks, permissions and misuse, which moving the file will not fix.
            if type(e) is sqlite3.DatabaseError:
                raise StoreError(
                    f"{path} is not a readable rung store ({e}); move it aside to start a new store,"
                    " or restore it from a copy"
                ) from None
            if isinstance(e, sqlite3.Error):
                raise StoreError(f"cannot open the store in {self.root}: {e}") from None
            raise

    def _has_run_folders(self) -> bool:
        runs = self.root / "runs"
        return runs.is_dir() and any(p.name.isdigit() for p in runs.iterdir())

    def run_dir(self, run_id: int) -> Path:
        return self.root / "runs" / str(run_id)

    def begin(
        self,
        problem: str,
        problem_path: str,
        solution: Solution,
        device: Device,
        seed: int,
        environment: dict[str, str],
        source: str | None = None,
    ) -> Run:
        """A new run, its solution stored with `source` (the bytes that will run; read from the
        solution's path when not given)."""
        now = time.time()
        if source is None:
            source = Path(solution.path).read_text(errors="replace")
        with self.db:
            self.db.execute("INSERT OR IGNORE INTO problems VALUES (?, ?, ?)", (problem, problem_path, now))
            self.db.execute(
                "INSERT OR IGNORE INTO solutions VALUES (?, ?, ?, ?, ?, ?, ?)",
                (solution.sha256, problem, solution.path, solution.backend, solution.parent, source, now),
            )
            cur = self.db.execute(
                "INSERT INTO runs (problem, solution, path, device, seed, environment, started) VALUES (?,?,?,?,?,?,?)",
                (
                    problem,
                    solution.sha256,
                    solution.path,
                    json.dumps(device.__dict__),
                    seed,
                    json.dumps(environment),
                    now,
                ),
            )
            run_id = int(cur.lastrowid or 0)
            # In the transaction, so a folder already there takes its run row away with it.
            try:
                os.makedirs(self.run_dir(run_id))
            except FileExistsError:
                raise StoreError(
                    f"{self.run_dir(run_id)} already holds a run that {self.root / 'rung.db'} does not know"
                    " (an older copy of rung.db?): restore the newest rung.db, or move that folder aside"
                ) from None
        return Run(run_id, problem, solution, device, seed, environment=environment, started=now)

    def add_rung(self, run: Run, result: RungResult) -> None:
        run.rungs.append(result)
        with self.db:
            self.db.execute(
                "INSERT INTO rungs (run_id, idx, name, status, message, metrics, artifacts, seconds, began_s)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run.id,
                    len(run.rungs) - 1,
                    result.name,
                    result.status.value,
                    result.message,
                    json.dumps(result.metrics, default=str),
                    json.dumps(result.artifacts),
                    result.seconds,
                    result.began_s,
                ),
            )
            if result.name == "load" and result.metrics.get("backend"):
                run.solution.backend = str(result.metrics["backend"])
                self.db.execute(
                    "UPDATE solutions SET backend=? WHERE sha256=?",
                    (run.solution.backend, run.solution.sha256),
                )

    def finish(self, run: Run) -> None:
        run.finished = time.time()
        with self.db:
            self.db.execute(
                "UPDATE runs SET finished=?, ok=? WHERE id=?", (run.finished, int(run.ok), run.id)
            )
        self._write_result(run)

    def interrupt(self, run: Run) -> None:
        """Finish a run a person stopped (Ctrl-C, SIGTERM): `interrupted` set, never ok. The runner
        records the rung it stopped as INTERRUPTED first; a run stopped between rungs gets a rung
        `stop` here, so the run's verdict says INTERRUPTED wherever it is read back."""
        if not any(r.status == Status.INTERRUPTED for r in run.rungs):
            self.add_rung(run, RungResult("stop", Status.INTERRUPTED, "stopped between rungs"))
        run.finished = time.time()
        with self.db:
            self.db.execute(
                "UPDATE runs SET finished=?, ok=0, interrupted=1 WHERE id=?", (run.finished, run.id)
            )
        self._write_result(run)

    def _write_result(self, run: Run) -> None:
        (self.run_dir(run.id) / "result.json").write_text(json.dumps(run.to_dict(), indent=1, default=str))

    def run(self, run_id: int) -> Run:
        row = self.db.execute(
            "SELECT r.id, r.problem, r.solution, r.path, r.device, r.seed, r.environment, r.started, r.finished,"
            " s.backend, s.parent FROM runs r JOIN solutions s ON s.sha256 = r.solution WHERE r.id=?",
            (run_id,),
        ).fetchone()
        if row is None:
            raise StoreError(f"no run {run_id} in {self.root}")
        return self._run(row)

    def runs(self, problem: str | None = None) -> list[Run]:
        rows = self.db.execute(
            "SELECT r.id, r.problem, r.solution, r.path, r.device, r.seed, r.environment, r.started, r.finished,"
            " s.backend, s.parent FROM runs r JOIN solutions s ON s.sha256 = r.solution"
            + (" WHERE r.problem=?" if problem else "")
            + " ORDER BY r.id",
            (problem,) if problem else (),
        ).fetchall()
        return [self._run(row) for row in rows]

    def source(self, sha256: str) -> str:
        """A stored solution's source, as it was when it climbed."""
        row = self.db.execute("SELECT source FROM solutions WHERE sha256=?", (sha256,)).fetchone()
        if row is None:
            raise StoreError(f"no solution {sha256[:10]} in {self.root}")
        return str(row[0])

    def _run(self, row: tuple[Any, ...]) -> Run:
        rid, problem, sha, path, device, seed, env, started, finished, backend, parent = row
        run = Run(
            int(rid),
            problem,
            Solution(path, sha, backend or "", parent),
            Device(**json.loads(device)),
            int(seed),
            environment=json.loads(env),
            started=started,
            finished=finished,
        )
        for name, status, message, metrics, artifacts, seconds, began_s in self.db.execute(
            "SELECT name, status, message, metrics, artifacts, seconds, began_s FROM rungs"
            " WHERE run_id=? ORDER BY idx",
            (rid,),
        ):
            run.rungs.append(
                RungResult(
                    name,
                    Status(status),
                    message,
                    json.loads(metrics),
                    json.loads(artifacts),
                    seconds,
                    began_s,
                )
            )
        return run

    def add_proposal(
        self, agent: str, proposal: Proposal, round_no: int, run: Run | None, ladder_s: float, gpu_s: float
    ) -> None:
        """What produced a version (or failed to): the agent, its note, prompt and reply, the
        tokens and money it cost, the seconds of agent, ladder and GPU it took, the tools it
        called on the way and the hints it was shown."""
        with self.db:
            self.db.execute(
                "INSERT INTO proposals (solution, agent, note, prompt, reply, created, run_id, round, error,"
                " tokens_in, tokens_out, cost_usd, agent_s, ladder_s, gpu_s, tool_calls, hints)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run.solution.sha256 if run else "",
                    agent,
                    proposal.note,
                    proposal.prompt,
                    proposal.reply,
                    time.time(),
                    run.id if run else None,
                    round_no,
                    proposal.error,
                    proposal.tokens_in,
                    proposal.tokens_out,
                    proposal.cost_usd,
                    proposal.agent_s,
                    ladder_s,
                    gpu_s,
                    json.dumps([c.to_dict() for c in proposal.tool_calls]),
                    json.dumps(proposal.hints),
                ),
            )

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
