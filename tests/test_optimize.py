"""The optimize loop on the CPU: replay and tune climb real versions, keep lineage, stop for a reason."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from rung.agents.tune import TuneAgent
from rung.errors import UsageError
from tests.conftest import FIXTURES, PROBLEMS

VECTOR_ADD = PROBLEMS / "vector_add"


def rung(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rung", *args], capture_output=True, text=True, timeout=900)


def replay(problem: Path, start: str, proposals: list[str], workspace: Path) -> dict:
    """`rung optimize --agent replay --json` from `start`, proposing `proposals` (paths in `problem`)."""
    args = ["optimize", str(problem), "--agent", "replay", "--from", str(problem / start)]
    for p in proposals:
        args += ["--replay", str(problem / p)]
    done = rung(*args, "--json", "-w", str(workspace))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_replay_climbs_each_version_and_stops_when_out_of_proposals(tmp_path):
    doc = replay(
        VECTOR_ADD,
        "solutions/correct/naive.py",
        ["solutions/correct/tuned.py", "solutions/wrong/input_mutated.py"],
        tmp_path,
    )
    assert doc["reason"] == "the agent has nothing more to propose"
    assert [c["verdict"] for c in doc["candidates"]] == ["PASS", "FAIL at guard"]
    assert doc["best"]["path"].endswith("naive.py")  # nothing can be timed here: the first correct one stays
    db = sqlite3.connect(tmp_path / ".rung" / "rung.db")
    start_sha = doc["best"]["sha256"]
    parents = {row[0] for row in db.execute("SELECT parent FROM solutions WHERE parent IS NOT NULL")}
    assert parents == {start_sha}  # lineage: both candidates came from the start
    notes = [row[0] for row in db.execute("SELECT note FROM proposals ORDER BY rowid")]
    assert notes == ["replayed tuned.py", "replayed input_mutated.py"]


def test_a_candidate_that_crashes_its_worker_costs_that_candidate_only(tmp_path):
    doc = replay(
        FIXTURES / "tiny",
        "solutions/good.py",
        ["solutions/segfault.py", "solutions/returns_none.py"],
        tmp_path,
    )
    crashed, after = doc["candidates"]
    run = {r["name"]: r for r in crashed["rungs"]}["run"]
    assert run["status"] == "ERROR" and "SIGSEGV" in run["message"]
    assert after["verdict"] == "FAIL at run"  # climbed in a fresh worker, failed for its own reason
    assert "returned None" in {r["name"]: r for r in after["rungs"]}["run"]["message"]
    assert doc["reason"] == "the agent has nothing more to propose"
    assert doc["best"]["path"].endswith("good.py")


def test_tune_tries_every_other_combination_as_a_real_version(tmp_path):
    done = rung(
        "optimize",
        str(VECTOR_ADD),
        "--agent",
        "tune",
        "--from",
        str(FIXTURES / "tunable_add.py"),
        "--parallel",
        "2",
        "--json",
        "-w",
        str(tmp_path),
    )
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["reason"] == "the agent has nothing more to propose"
    assert len(doc["candidates"]) == 3 and all(c["ok"] for c in doc["candidates"])
    sources = [Path(c["path"]).read_text() for c in doc["candidates"]]
    assert any("BLOCK = 1024" in s and "NUM_WARPS = 8" in s for s in sources)


def test_resume_continues_from_the_best_stored_version(tmp_path):
    first = rung(
        "check", str(VECTOR_ADD), str(VECTOR_ADD / "solutions/correct/naive.py"), "-w", str(tmp_path)
    )
    assert first.returncode == 0
    done = rung(
        "optimize",
        str(VECTOR_ADD),
        "--agent",
        "replay",
        "--replay",
        str(VECTOR_ADD / "solutions/correct/torch_add.py"),
        "--rounds",
        "1",
        "--json",
        "-w",
        str(tmp_path),
    )
    doc = json.loads(done.stdout)
    assert doc["best"]["path"].endswith("naive.py") and len(doc["candidates"]) == 1
    assert "round budget (1) spent" in doc["reason"]


def tune_undefined(folder: Path) -> Path:
    """The tunable fixture with a TUNE naming STAGES, which the file never assigns."""
    path = folder / "tune_undefined.py"
    source = (FIXTURES / "tunable_add.py").read_text()
    path.write_text(source.replace('"NUM_WARPS": [4, 8]}', '"STAGES": [2, 3]}'))
    return path


def test_tune_refuses_a_name_the_source_does_not_define(tmp_path):
    with pytest.raises(UsageError, match="TUNE names STAGES, which the source does not assign"):
        TuneAgent(tune_undefined(tmp_path).read_text())


def test_bad_optimize_usage_is_one_line_exit_two(tmp_path):
    done = rung(
        "optimize",
        str(VECTOR_ADD),
        "--agent",
        "tune",
        "--from",
        str(tune_undefined(tmp_path)),
        "-w",
        str(tmp_path),
    )
    assert done.returncode == 2 and "TUNE names STAGES" in done.stderr and "Traceback" not in done.stderr
    nothing = rung(
        "optimize",
        str(VECTOR_ADD),
        "--agent",
        "replay",
        "--replay",
        str(VECTOR_ADD / "problem.py"),
        "-w",
        str(tmp_path / "empty"),
    )
    assert nothing.returncode == 2 and "no passing version" in nothing.stderr
    unknown = rung("optimize", str(VECTOR_ADD), "--agent", "oracle", "-w", str(tmp_path))
    assert unknown.returncode == 2 and "unknown agent" in unknown.stderr
    missing = rung("optimize", str(VECTOR_ADD), "--agent", "tune", "--from", str(tmp_path / "nope.py"))
    assert missing.returncode == 2 and "no such solution file" in missing.stderr
    no_from = rung("optimize", str(VECTOR_ADD), "--agent", "tune", "-w", str(tmp_path))
    assert no_from.returncode == 2 and "needs --from" in no_from.stderr


TINY = FIXTURES / "tiny"
TINY_GOOD = TINY / "solutions" / "good.py"


def test_interactive_takes_a_hint_then_accepts(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "rung", "optimize", str(TINY), "--agent", "replay", "--from", str(TINY_GOOD)]
        + ["--replay", str(TINY_GOOD)] * 3
        + ["--interactive", "-w", str(tmp_path)],
        input="h use fewer ops\na\n",
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "hint added: use fewer ops" in done.stdout
    assert "stopped: accepted by the person" in done.stdout
    assert done.stdout.count("best so far:") == 2  # asked after each of the two rounds


def test_events_as_json_lines_end_with_the_summary(tmp_path):
    done = rung(
        "optimize",
        str(TINY),
        "--agent",
        "replay",
        "--from",
        str(TINY_GOOD),
        "--replay",
        str(TINY_GOOD),
        "--jsonl",
        "-w",
        str(tmp_path),
    )
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    kinds = [e["event"] for e in events]
    # The replayed version is the start itself: not climbed twice, a failed candidate saying so.
    assert kinds == ["start", "round_start", "no_version", "round", "round_start", "done"]
    assert (
        events[2]["error"] == f"the same source as run {events[0]['run']}, which already climbed the ladder"
    )
    assert events[1]["left"] == {"rounds": 10} and events[1]["in_flight"] == 1
    assert events[-1]["reason"] == "the agent has nothing more to propose"
    assert events[-1]["spent"]["rounds"] == 1 and events[-1]["spent"]["overhead_s"] >= 0


def test_a_money_budget_without_prices_is_refused(tmp_path):
    args = [
        "optimize",
        str(TINY),
        "--agent",
        "llm",
        "--model",
        "m",
        "--max-usd",
        "1",
        "--from",
        str(TINY_GOOD),
    ]
    done = subprocess.run(
        [sys.executable, "-m", "rung", *args, "-w", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "ANTHROPIC_API_KEY": "x"},
    )
    assert done.returncode == 2 and "a money budget needs the model's prices" in done.stderr


def _planted_bench(run, ms: float):
    """`run` as if bench had timed the tiny problem's case at `ms` (a CPU has nothing to time)."""
    from rung.spec import RungResult, Status

    timed = RungResult("bench", Status.OK, "planted", {"cases": [{"case": {"n": 4096}, "median_ms": ms}]})
    kept = [r for r in run.rungs if r.name != "bench"]
    run.rungs = (
        [timed if r.name == "bench" else r for r in run.rungs]
        if len(kept) < len(run.rungs)
        else [*kept, timed]
    )
    return run


def _planted_profile(chosen_run, ncu_us: float):
    """The profile climb of `chosen_run` as a GPU would store it: Nsight Compute's kernels of the
    profiled case's call, and no bench figure of its own (its witness reads unwitnessed)."""
    import dataclasses

    from rung.spec import RungResult, Status

    figures = {"kernels": [{"total_us": ncu_us}], "witness": {"case": {"n": 4096}, "verdict": "unwitnessed"}}
    kept = [r for r in chosen_run.rungs if r.name not in ("bench", "profile")]
    return dataclasses.replace(
        chosen_run, id=chosen_run.id + 100, rungs=[*kept, RungResult("profile", Status.OK, "", figures)]
    )


def test_a_new_best_its_witness_contradicts_is_not_kept(tmp_path, monkeypatch):
    """Planted: the start times 10 us, the candidate 5 us (a new best by far), and Nsight Compute
    reads the candidate's profiled call at 14.8 us: bench's 5 us is contradicted, so the candidate
    is not the best, the agent is told why, and the summary marks it contradicted."""
    from rung import chosen, render, runner, views
    from rung.agents.replay import ReplayAgent
    from rung.optimize import Budget, optimize
    from rung.store import Store

    climb = runner.climb
    faster = tmp_path / "faster.py"
    faster.write_text("def custom_kernel(x):\n    return x + x\n")

    def timed(store, problem, device, path, *args, **kwargs):
        run = climb(store, problem, device, path, *args, **kwargs)
        return _planted_bench(run, 0.005 if "x + x" in path.read_text() else 0.010)

    monkeypatch.setattr(runner, "climb", timed)
    monkeypatch.setattr(
        chosen, "profile", lambda store, problem, device, run, path: _planted_profile(run, 14.8)
    )
    events: list[dict] = []
    agent = ReplayAgent([faster])
    outcome = optimize(Store(tmp_path), TINY, agent, TINY_GOOD, Budget(rounds=2), on_event=events.append)
    (candidate,) = outcome.candidates
    assert outcome.best.solution.path.endswith("good.py") and candidate.ok  # verified, yet not the best
    (said,) = [e for e in events if e["event"] == "contradicted"]
    assert said["run"] == candidate.id and said["message"].startswith(
        "bench's figure for case {'n': 4096}, 5.0 us, reads 66% under Nsight Compute's 14.8 us"
    )
    assert not any(e["event"] == "profiled" for e in events)
    (mark,) = views.solution_json(candidate, outcome.witnesses)["bench_figures"]
    assert mark["witness"] == "contradicted" and mark["profile_run"] == candidate.id + 100
    assert render.witnessed(outcome.best, outcome.witnesses) == "figures: n=4096 0.01 ms unwitnessed"
    assert "not kept as the best: bench's figure" in render.event(said, 2)


def _contender(run_id: int, ms: float):
    from rung.agents import Tried
    from rung.spec import Device, Run, RungResult, Solution, Status

    rungs = [RungResult(n, Status.OK, "") for n in ("run", "guard", "correct", "scale")]
    run = Run(
        run_id,
        "tiny",
        Solution(f"v{run_id}.py", str(run_id) * 64),
        Device("cuda", "H100"),
        1,
        rungs,
        finished=1.0,
    )
    return Tried(_planted_bench(run, ms), "")


def test_contenders_are_witnessed_fastest_first_until_one_holds():
    """rung.chosen on planted runs: the fastest contender contradicted, the next witnessed and
    crowned; a profile climb that failed contradicts too; none due leaves it unwitnessed."""
    import dataclasses

    from rung import chosen
    from rung.spec import RungResult, Status
    from rung.weighing import score

    fast, honest, slow = _contender(1, 0.005), _contender(2, 0.0140), _contender(3, 0.020)
    ncu = {1: 14.8, 2: 14.8, 3: 20.5}
    seen: list[int] = []

    def witnessed(tried):
        seen.append(tried.run.id)
        return chosen.witness(tried.run, _planted_profile(tried.run, ncu[tried.run.id]))

    crowned, demoted = chosen.crown([slow, fast, honest], lambda t: score(t.run)[0], witnessed)
    assert crowned is not None and crowned[0] is honest and crowned[1]["verdict"] == "witnessed"
    assert seen == [1, 2] and [(t.run.id, w["verdict"]) for t, w in demoted] == [(1, "contradicted")]
    failing = _planted_profile(honest.run, 14.8)
    failing.rungs[-1] = RungResult(
        "profile", Status.FAILED, "wrong answer in the call Nsight Compute profiled"
    )
    w = chosen.witness(honest.run, failing)
    assert (
        w["verdict"] == "contradicted" and "wrong answer in the call Nsight Compute profiled" in w["message"]
    )
    assert w["case"] == {"n": 4096}
    assert chosen.witness(honest.run, None) == {"verdict": "unwitnessed"}
    untimed = dataclasses.replace(honest.run, rungs=honest.run.rungs[:-1])
    assert chosen.witness(untimed, _planted_profile(honest.run, 14.8))["verdict"] == "unwitnessed"
