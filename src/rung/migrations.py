"""The store's schema, as numbered migrations: `rung.db` at version N has had migrations 1..N
applied, and `PRAGMA user_version` says N.

Each migration is numbered, applied once, in order, under one write lock (BEGIN IMMEDIATE: stores
opened by many processes at once wait for the first, then find nothing left to do), and never
edited or reordered once released: a new column or table is a new migration at the end. A store
at a version above the last this rung knows was written by a newer rung and is refused.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rung.errors import StoreError

# The tables of the first release, before user_version was kept.
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
# Columns added to proposals after its first release, with their types.
PROPOSAL_COLUMNS = {
    "run_id": "INTEGER",  # the run its version climbed; NULL for a proposal with no solution
    "round": "INTEGER",
    "error": "TEXT NOT NULL DEFAULT ''",  # why the agent produced no solution
    "tokens_in": "INTEGER NOT NULL DEFAULT 0",
    "tokens_out": "INTEGER NOT NULL DEFAULT 0",
    "cost_usd": "REAL",  # NULL where the model's price is not known
    "agent_s": "REAL NOT NULL DEFAULT 0",  # wall seconds the agent spent writing it
    "ladder_s": "REAL NOT NULL DEFAULT 0",  # wall seconds of its climb
    "gpu_s": "REAL NOT NULL DEFAULT 0",  # seconds of rungs run in a judge on a GPU
}


def _first_schema(db: sqlite3.Connection) -> None:
    """The tables and proposal columns of every store made before user_version was kept; those
    stores are at user_version 0 with some or all of this already there, so it adds only what
    is missing."""
    _execute(db, SCHEMA_SQL)
    have = {row[1] for row in db.execute("PRAGMA table_info(proposals)")}
    for name, kind in PROPOSAL_COLUMNS.items():
        if name not in have:
            db.execute(f"ALTER TABLE proposals ADD COLUMN {name} {kind}")


@dataclass(frozen=True)
class Migration:
    number: int  # the user_version a store has once this is applied
    what: str
    apply: str | Callable[[sqlite3.Connection], None]  # SQL statements (";"-separated), or a function


MIGRATIONS = (
    Migration(1, "the tables of the first release; stores made then are at 0 with some of it", _first_schema),
    Migration(
        2, "runs.interrupted: 1 for a run a person stopped", "ALTER TABLE runs ADD COLUMN interrupted INTEGER"
    ),
    Migration(
        3,
        "proposals.tool_calls: the agent's tool calls while writing a version (JSON: tool, arguments,"
        " seconds, the run a climb gave, the tokens of the turn that asked); proposals.hints: the"
        " person's hints it was shown",
        "ALTER TABLE proposals ADD COLUMN tool_calls TEXT NOT NULL DEFAULT '[]';"
        "ALTER TABLE proposals ADD COLUMN hints TEXT NOT NULL DEFAULT '[]'",
    ),
    Migration(
        4,
        "rungs.began_s: when the rung began, in seconds after its run's start (NULL in runs stored before)",
        "ALTER TABLE rungs ADD COLUMN began_s REAL",
    ),
)
LATEST = MIGRATIONS[-1].number


def _execute(db: sqlite3.Connection, script: str) -> None:
    # Statement by statement: executescript commits first, which would let go of the write lock.
    for statement in script.split(";"):
        if statement.strip():
            db.execute(statement)


def migrate(db: sqlite3.Connection, path: Path) -> None:
    """Apply the migrations numbered above `db`'s user_version, in order, in one transaction."""
    if version(db) == LATEST:
        return
    db.execute("BEGIN IMMEDIATE")
    try:
        done = version(db)
        if done > LATEST:
            raise StoreError(
                f"{path} was written by a newer rung (schema {done}, this one knows {LATEST}): upgrade rung"
            )
        for step in MIGRATIONS:
            if step.number > done:
                if isinstance(step.apply, str):
                    _execute(db, step.apply)
                else:
                    step.apply(db)
                db.execute(f"PRAGMA user_version = {step.number}")
        db.commit()
    except BaseException:
        db.rollback()
        raise


def version(db: sqlite3.Connection) -> int:
    return int(db.execute("PRAGMA user_version").fetchone()[0])
