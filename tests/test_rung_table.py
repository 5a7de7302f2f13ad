"""The one rung table matches the ladder: the same rungs, each implemented where the ladder says
it runs, by a function that exists; and each headline reads the figures its rung records."""

from __future__ import annotations

from pathlib import Path

from rung import rung_table
from rung.ladder import LADDER, RungSpec
from rung.rung_table import CONTROLLER, JUDGE, RUNGS, Implementation
from rung.spec import TOOL_RUNGS
from tests.conftest import ROOT


def table_errors(rungs: dict[str, Implementation], ladder: tuple[RungSpec, ...]) -> list[str]:
    """Where the table and the ladder disagree, one line each."""
    names = [spec.name for spec in ladder]
    errors = [f"{n}: on the ladder, not in the table" for n in names if n not in rungs]
    errors += [f"{n}: in the table, not on the ladder" for n in rungs if n not in names]
    for spec in ladder:
        rung = rungs.get(spec.name)
        if rung is not None and (rung.where == CONTROLLER) != spec.in_controller:
            errors.append(f"{spec.name}: runs in the {rung.where}, the ladder says otherwise")
    return errors


def test_the_table_is_the_ladders_rungs_each_where_the_ladder_runs_it():
    assert table_errors(RUNGS, LADDER) == []
    assert {r.where for r in RUNGS.values()} == {JUDGE, CONTROLLER}


def test_every_implementation_is_a_function_that_exists():
    for name, rung in RUNGS.items():
        assert callable(rung.load()), name


def test_a_table_that_drifted_from_the_ladder_fails():
    ladder = (RungSpec("run", ""), RungSpec("dump", "", in_controller=True), RungSpec("bench", ""))
    drifted = {
        "run": Implementation(JUDGE, "rung.judge.rungs.run:run"),
        "dump": Implementation(JUDGE, "rung.derived.sass:dump"),
        "lint": Implementation(JUDGE, "rung.judge.rungs.run:run"),
    }
    assert table_errors(drifted, ladder) == [
        "bench: on the ladder, not in the table",
        "lint: in the table, not on the ladder",
        "dump: runs in the judge, the ladder says otherwise",
    ]


def test_headlines_read_each_rungs_figures():
    assert rung_table.headline("load", {"backend": "triton"}) == "backend=triton"
    compiled = {"max_registers": 40, "max_shared_bytes": 1024, "spill_instructions": 0}
    assert rung_table.headline("compile", compiled) == "regs=40 smem=1024B spills=0"
    assert rung_table.headline("run", {"call_s": 0.01234, "launches": 2}) == "call=0.0123s launches=2"
    errors = {"max_abs_err": float("inf"), "unwritten_pct": 12.5, "cosine": 0.99991}
    assert rung_table.headline("scale", errors) == "unwritten_pct=12.5 max_abs_err=inf cosine=1"
    assert rung_table.headline("bench", {"cases": []}) == ""
    assert rung_table.headline("executor", {}) == ""  # a lost worker's record: no rung of the table


def rungs_running_a_tool(rungs: dict[str, Implementation]) -> set[str]:
    """The rungs whose judge module runs a tool over the solution (judge/tool_run.py), read from
    their source: importing them would import torch."""
    found = set()
    for name, rung in rungs.items():
        module = rung.function.partition(":")[0]
        source = (ROOT / "src" / Path(*module.split("."))).with_suffix(".py").read_text()
        if "from rung.judge.tool_run import" in source:
            found.add(name)
    return found


def test_the_rungs_a_run_counts_as_its_profile_time_are_those_that_run_a_tool():
    assert rungs_running_a_tool(RUNGS) == set(TOOL_RUNGS)
    drifted = {**RUNGS, "bench": Implementation(JUDGE, "rung.judge.rungs.profile:profile")}
    assert rungs_running_a_tool(drifted) != set(TOOL_RUNGS)  # a new tool rung is caught
