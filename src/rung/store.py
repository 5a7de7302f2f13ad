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
from typing import Any

from rung import knobs
from rung.errors import StoreError
from rung.spec import Device, Run, RungResult, Solution, Status

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

    def add_proposal(self, sha256: str, agent: str, note: str, prompt: str, reply: str) -> None:
        """What produced a version: the agent, its note, and the prompt and reply where there were any."""
        with self.db:
            self.db.execute(
                "INSERT INTO proposals VALUES (?, ?, ?, ?, ?, ?)",
                (sha256, agent, note, prompt, reply, time.time()),
            )

    def close(self) -> None:
        self.db.close()
