"""The verdict-parity table: one row per (problem, solution), two checkers' verdicts side by side.

Shared by bench/parity_gpumode.py and bench/parity_kernelbench.py. A row holds what each checker
said (verdict PASS, FAIL, SKIPPED or ERROR; the reason it gave; its wall time), the verdict the
solution was built to get (`expected`), and whether the two checkers agree. The table is written
as parity.json and parity.md after every problem, so a run cut short keeps what finished, and a
later run with --resume skips the rows already there, but for those where a checker gave no
verdict (ERROR), which it judges again.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

COMPARABLE = ("PASS", "FAIL")


def agreement(rung: str, theirs: str) -> tuple[bool | None, str]:
    """Whether rung and the other checker agree, and how they part where they do not.

    Only PASS and FAIL are verdicts on the solution; an ERROR or a SKIPPED on either side (a
    harness crash, a case too large for the machine) says nothing about it, so the row is not
    comparable rather than a disagreement."""
    if rung not in COMPARABLE or theirs not in COMPARABLE:
        return None, "not comparable"
    if rung == theirs:
        return True, "agree"
    return False, "rung stricter" if rung == "FAIL" else "rung laxer"


@dataclass
class Row:
    problem: str
    solution: str
    origin: str  # shipped example, shipped correct, shipped wrong, generated
    expected: str  # PASS or FAIL: what the solution was built to get
    theirs: dict[str, Any]
    rung: dict[str, Any]
    rung_warm: dict[str, Any] = field(default_factory=dict)  # a later version, same workspace and cache
    rung_loop: dict[str, Any] = field(default_factory=dict)  # that version as the optimize loop climbs it
    note: str = ""

    @property
    def key(self) -> str:
        return f"{self.problem}/{self.solution}"

    def to_dict(self) -> dict[str, Any]:
        agree, kind = agreement(self.rung.get("verdict", "ERROR"), self.theirs.get("verdict", "ERROR"))
        return {
            "problem": self.problem,
            "solution": self.solution,
            "origin": self.origin,
            "expected": self.expected,
            "theirs": self.theirs,
            "rung": self.rung,
            "rung_warm": self.rung_warm,
            "rung_loop": self.rung_loop,
            "note": self.note,
            "agree": agree,
            "kind": kind,
        }


@dataclass
class Table:
    """Rows in the order they were judged, with the settings they were judged under."""

    title: str
    theirs_name: str  # the other checker, as the table's column names it
    settings: dict[str, str]
    rows: list[dict[str, Any]] = field(default_factory=list)
    complete: bool = False

    def done(self) -> set[str]:
        """The rows a resumed run skips: all but those where a checker gave no verdict (ERROR: a
        crash, a GPU shared and out of memory), which are judged again."""
        return {
            f"{r['problem']}/{r['solution']}"
            for r in self.rows
            if "ERROR" not in (r["rung"].get("verdict", "ERROR"), r["theirs"].get("verdict", "ERROR"))
        }

    def add(self, row: Row) -> None:
        self.rows = [r for r in self.rows if f"{r['problem']}/{r['solution']}" != row.key]
        self.rows.append({**row.to_dict(), "judged": datetime.now(timezone.utc).isoformat()})

    def write(self, out: Path) -> None:
        out.mkdir(parents=True, exist_ok=True)
        doc = {
            "title": self.title,
            "theirs": self.theirs_name,
            "settings": self.settings,
            "written": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
            "complete": self.complete,
            "rows": self.rows,
        }
        (out / "parity.json").write_text(json.dumps(doc, indent=1))
        (out / "parity.md").write_text(markdown(doc))

    @classmethod
    def resume(cls, out: Path, title: str, theirs_name: str, settings: dict[str, str]) -> Table:
        """The rows an earlier run wrote to `out`, to be kept and skipped; none if there is none."""
        path = out / "parity.json"
        rows = json.loads(path.read_text())["rows"] if path.is_file() else []
        return cls(title, theirs_name, settings, rows)

    @classmethod
    def merge(cls, parts: list[Path]) -> Table:
        """One table of the runs written to `parts` (problems judged in parallel streams, each to a
        folder of its own, perhaps each resumed from the same earlier table): one row per solution,
        the one judged last (a part resumed from an earlier table carries that table's rows as
        they were; a row judged again in another part replaces them), in problem order; complete
        when every part is. Rows of equal age (none stamped) go to the later part."""
        docs = [json.loads((part / "parity.json").read_text()) for part in parts]
        if len({(d["title"], d["theirs"], json.dumps(d["settings"], sort_keys=True)) for d in docs}) > 1:
            raise ValueError("the parts were written by different suites or under different settings")
        keyed: dict[str, dict[str, Any]] = {}
        for row in (r for d in docs for r in d["rows"]):
            key = f"{row['problem']}/{row['solution']}"
            if row.get("judged", "") >= keyed.get(key, {}).get("judged", ""):
                keyed[key] = row
        rows = sorted(keyed.values(), key=lambda r: _problem_order(r["problem"]))
        first = docs[0]
        return cls(first["title"], first["theirs"], first["settings"], rows, all(d["complete"] for d in docs))


def _problem_order(problem: str) -> tuple[Any, ...]:
    """level1/11_x after level1/1_y and before level1/21_z: numbers compared as numbers."""
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", problem))


def markdown(doc: dict[str, Any]) -> str:
    """The table as Markdown: settings, a count, the verdict table, then time to verdict."""
    rows = doc["rows"]
    kinds = [r["kind"] for r in rows]
    counts = ", ".join(
        f"{k}: {kinds.count(k)}" for k in ("agree", "rung stricter", "rung laxer", "not comparable")
    )
    settings = "; ".join(f"`{k}={v}`" for k, v in doc["settings"].items())
    lines = [
        f"# {doc['title']}",
        "",
        f"Written {doc['written']}{'' if doc['complete'] else ' (incomplete: rows still to judge)'}. "
        f"rung ran with {settings}.",
        "",
        f"{len(rows)} solutions: {counts}.",
        "",
        f"| problem | solution | origin | expected | {doc['theirs']} | rung | agree | {doc['theirs']} says | rung says |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        agree = {True: "yes", False: f"**NO** ({r['kind']})", None: "n/a"}[r["agree"]]
        lines.append(
            f"| {r['problem']} | {r['solution']} | {r['origin']} | {r['expected']} | {r['theirs'].get('verdict')} "
            f"| {r['rung'].get('said', r['rung'].get('verdict'))} | {agree} | {_cell(r['theirs'].get('reason', ''))} "
            f"| {_cell(_rung_words(r))} |"
        )
    return "\n".join([*lines, "", *time_to_verdict(rows, doc["theirs"])]) + "\n"


def time_to_verdict(rows: list[dict[str, Any]], theirs: str) -> list[str]:
    """Per problem, the solution checked cold, then a later version warm (a second `rung check`)
    and in the loop (bench/loop_climb.py): wall seconds beside the other checker's, and how sure
    each side's timing was (`_precision`) where it recorded that."""
    timed = [r for r in rows if r.get("rung_warm")]
    if not timed:
        return []
    lines = [
        "## Time to verdict (wall seconds)",
        "",
        f"| problem | solution | {theirs} s | rung cold s | rung warm s | rung in the loop s "
        "| cold speedup (target 2x) | warm speedup | in the loop (target 4x) "
        f"| {theirs} timing sure to | rung's (cold) |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |",
    ]
    for r in timed:
        own, cold, warm = r["theirs"].get("seconds"), r["rung"].get("seconds"), r["rung_warm"].get("seconds")
        loop = r.get("rung_loop", {}).get("seconds")
        lines.append(
            f"| {r['problem']} | {r['solution']} | {_s(own)} | {_s(cold)} | {_s(warm)} | {_s(loop)} "
            f"| {_ratio(own, cold, 2.0)} | {_ratio(own, warm, 4.0)} | {_ratio(own, loop, 4.0)} "
            f"| {_precision(r['theirs'].get('modes', {}).get('benchmark', {}).get('cases', []), 'runs')} "
            f"| {_precision(r['rung'].get('bench_cases', []), 'samples')} |"
        )
    return [*lines, ""]


def _precision(cases: list[dict[str, Any]], count: str) -> str:
    """A timing's precision over its cases: the widest relative standard error of a case's figure
    (eval.py's mean, rung's median) and the fewest calls a case took, with the narrowest error."""
    if not cases:
        return ""
    worst = max(cases, key=lambda c: c["rel_err"])
    best = min(cases, key=lambda c: c["rel_err"])
    fewest = min(int(c[count]) for c in cases)
    return f"±{worst['rel_err'] * 100:.2f}% at worst (±{best['rel_err'] * 100:.2f}% at best), {fewest}+ calls a case"


def _rung_words(row: dict[str, Any]) -> str:
    rung = row["rung"]
    words = [rung.get("reason", ""), *(f"warns: {w}" for w in rung.get("warnings", []))]
    if row.get("note"):
        words.append(f"note: {row['note']}")
    return "; ".join(w for w in words if w)


def _cell(text: str, limit: int = 220) -> str:
    """One table cell: one line, no pipes, cut at `limit` characters."""
    flat = " ".join(str(text).split()).replace("|", "/")
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _s(seconds: float | None) -> str:
    return "" if seconds is None else f"{seconds:.1f}"


def _ratio(theirs: float | None, rung: float | None, target: float) -> str:
    if not theirs or not rung:
        return ""
    ratio = theirs / rung
    return f"{ratio:.2f}x {'met' if ratio >= target else 'not met'}"


def main() -> None:
    ap = argparse.ArgumentParser(description="Merge parity tables written by parallel runs into one.")
    ap.add_argument("out", type=Path, help="folder for the merged parity.json and parity.md")
    ap.add_argument("parts", type=Path, nargs="+", help="folders each holding a parity.json")
    args = ap.parse_args()
    Table.merge(args.parts).write(args.out)
    print((args.out / "parity.md").read_text())


if __name__ == "__main__":
    main()
