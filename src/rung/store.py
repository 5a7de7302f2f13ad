"""The workspace store: `.rung/rung.db` (SQLite, WAL) and `.rung/runs/<id>/` for artifacts.

Problems, solutions (by content hash, with their source), runs and rungs. A run row is written
when the climb starts and every rung is committed as it ends, so a run killed halfway keeps what
it did; its `finished` stays empty.
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
from rung.spec import Device, Run, RungResult, Solution, Status

if TYPE_CHECKING:
    from rung.agents import Proposal

SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS problems (
    name TEXT PRIMARY KEY, path TEXT NOT NULL, first_seen REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS solutions (
    sha256 TEXT PRIMARY KEY, problem TEXT NOT NULL, path TEXT NOT NULL, backend TEXT,
    parent TEXT, source TEXT NOT NULL, created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT, problem TEXT NOT NULL, solution TEXT NOT NULL,
    path TEXT NOT NULL, device TEXT NOT NULL, seed INTEGER NOT NULL, environment TEXT NOT NULL,
    started REAL NOT NULL, finished REAL, ok INTEGER
);
CREATE TABLE IF NOT EXISTS rungs (
    run_id INTEGER NOT NULL REFERENCES runs(id), idx INTEGER NOT NULL, name TEXT NOT NULL,
    status TEXT NOT NULL, message TEXT NOT NULL, metrics TEXT NOT NULL, artifacts TEXT NOT NULL,
    seconds REAL NOT NULL, PRIMARY KEY (run_id, idx)
);
CREATE INDEX IF NOT EXISTS runs_by_problem ON runs(problem, id);
CREATE TABLE IF NOT EXISTS proposals (
    solution TEXT NOT NULL, agent TEXT NOT NULL, note TEXT NOT NULL, prompt TEXT NOT NULL,
    reply TEXT NOT NULL, created REAL NOT NULL
);
"""
# Columns added to proposals after its first release, with their types: added where missing.
PROPOSAL_COLUMNS = {
    "run_id": "INTEGER",  # the run its version climbed; NULL for a proposal with no solution
    "round": "INTEGER",
    "error": "TEXT NOT NULL DEFAULT ''",  # why the agent produced no solution
    "tokens_in": "INTEGER NOT NULL DEFAULT 0",
    "tokens_out": "INTEGER NOT NULL DEFAULT 0",
    "cost_usd": "REAL",  # NULL where the model's price is not known
    "agent_s": "REAL NOT NULL DEFAULT 0",  # wall seconds the agent spent writing it
    "ladder_s": "REAL NOT NULL DEFAULT 0",  # wall seconds of its climb
    "gpu_s": "REAL NOT NULL DEFAULT 0",  # seconds of rungs run in a worker on a GPU
}


def find_workspace(start: Path | None = None) -> Path:
    """RUNG_WORKSPACE, else the nearest folder upwards holding `.rung/`, else the current folder."""
    configured = str(knobs.get("RUNG_WORKSPACE"))
    if configured:
        return Path(configured).resolve()
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / ".rung").is_dir():
            return folder
    return here


class Store:
    def __init__(self, workspace: Path) -> None:
        self.root = workspace / ".rung"
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(self.root / "rung.db", timeout=30)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.executescript(SCHEMA_SQL)
            have = {row[1] for row in self.db.execute("PRAGMA table_info(proposals)")}
            with self.db:
                for name, kind in PROPOSAL_COLUMNS.items():
                    if name not in have:
                        self.db.execute(f"ALTER TABLE proposals ADD COLUMN {name} {kind}")
        except (OSError, sqlite3.Error) as e:
            raise StoreError(f"cannot open the store in {self.root}: {e}") from None

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
    ) -> Run:
        now = time.time()
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
        os.makedirs(self.run_dir(run_id), exist_ok=True)
        return Run(run_id, problem, solution, device, seed, environment=environment, started=now)

    def add_rung(self, run: Run, result: RungResult) -> None:
        run.rungs.append(result)
        with self.db:
            self.db.execute(
                "INSERT INTO rungs VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run.id,
                    len(run.rungs) - 1,
                    result.name,
                    result.status.value,
                    result.message,
                    json.dumps(result.metrics, default=str),
                    json.dumps(result.artifacts),
                    result.seconds,
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
        for name, status, message, metrics, artifacts, seconds in self.db.execute(
            "SELECT name, status, message, metrics, artifacts, seconds FROM rungs WHERE run_id=? ORDER BY idx",
            (rid,),
        ):
            run.rungs.append(
                RungResult(name, Status(status), message, json.loads(metrics), json.loads(artifacts), seconds)
            )
        return run

    def add_proposal(
        self, agent: str, proposal: Proposal, round_no: int, run: Run | None, ladder_s: float, gpu_s: float
    ) -> None:
        """What produced a version (or failed to): the agent, its note, prompt and reply, the
        tokens and money it cost, and the seconds of agent, ladder and GPU it took."""
        with self.db:
            self.db.execute(
                "INSERT INTO proposals (solution, agent, note, prompt, reply, created, run_id, round, error,"
                " tokens_in, tokens_out, cost_usd, agent_s, ladder_s, gpu_s)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
                ),
            )

    def close(self) -> None:
        self.db.close()
