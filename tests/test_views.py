"""History and lineage, read from a real SQLite store written through the store's own API: each
version's time per case, its speedups over the reference and its parent, its percent of
roofline, verdict and parent; pages of history; a run's chain of parents."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from rung import api, render, views
from rung.spec import Device, Run, RungResult, Solution, Status
from rung.store import Store

H200 = Device("cuda", "NVIDIA H200", "sm_90", ceilings={"dram_gbps": 4000.0})
CASES = [{"n": 1024}, {"n": 1048576}]
REFERENCE_MS = [0.010, 0.400]


H100 = Device("cuda", "NVIDIA H100 80GB HBM3", "sm_90", ceilings={"dram_gbps": 3000.0})


def _timed(
    store: Store, path: str, sha: str, parent: str | None, medians: list[float], device: Device = H200
) -> Run:
    """A version that passed and was timed: bench and roofline figures as the rungs write them."""
    run = store.begin("add", "problems/add", Solution(path, sha, "triton", parent), device, 7, {}, source="x")
    for name in ("run", "guard", "correct", "scale"):
        store.add_rung(run, RungResult(name, Status.OK, "all match"))
    bench = [
        {"case": c, "median_ms": m, "speedup_vs_reference": ref / m}
        for c, m, ref in zip(CASES, medians, REFERENCE_MS, strict=True)
    ]
    store.add_rung(run, RungResult("bench", Status.OK, "timed", {"cases": bench}))
    roof = [{"case": c, "pct_of_roofline": 0.001 / m} for c, m in zip(CASES, medians, strict=True)]
    store.add_rung(run, RungResult("roofline", Status.OK, "", {"cases": roof}))
    store.finish(run)
    return run


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """v1 (no parent), v2 from v1 (faster), v3 from v2 (wrong), v1 checked again, v4 from v2."""
    store = Store(tmp_path)
    _timed(store, "v1.py", "a" * 64, None, [0.008, 0.200])
    _timed(store, "v2.py", "b" * 64, "a" * 64, [0.004, 0.100])
    wrong = store.begin(
        "add", "problems/add", Solution("v3.py", "c" * 64, "triton", "b" * 64), H200, 7, {}, "x"
    )
    store.add_rung(wrong, RungResult("correct", Status.FAILED, "12 of 1024 elements differ\nat [3]"))
    store.finish(wrong)
    _timed(store, "v1.py", "a" * 64, None, [0.008, 0.210])
    _timed(store, "v4.py", "d" * 64, "b" * 64, [0.002, 0.080])
    store.close()
    return tmp_path


def test_history_gives_times_speedups_roofline_and_parents(workspace):
    doc = views.history_doc("add", api.history("add", workspace))
    assert (doc["total"], doc["offset"], doc["next_offset"]) == (5, 0, None)
    v1, v2, v3, _, v4 = doc["runs"]
    assert [r["parent_run"] for r in doc["runs"]] == [None, 1, 2, None, 2]
    assert [c["median_ms"] for c in v2["cases"]] == [0.004, 0.100]
    assert [c["speedup_vs_parent"] for c in v2["cases"]] == pytest.approx([2.0, 2.0])
    assert v2["speedup_vs_parent"] == pytest.approx(2.0)
    assert v2["speedup_vs_reference"] == pytest.approx(math.sqrt(0.010 / 0.004 * 0.400 / 0.100))
    assert v2["pct_of_roofline"] == pytest.approx(math.sqrt(0.001 / 0.004 * 0.001 / 0.100))
    assert [c["speedup_vs_parent"] for c in v4["cases"]] == pytest.approx([2.0, 1.25])
    assert "speedup_vs_parent" not in v1 and v1["parent"] is None
    assert (v3["verdict"], v3["why"], v3["cases"], v3["parent"]) == (
        "FAIL at correct",
        "12 of 1024 elements differ",
        [],
        "b" * 64,
    )
    assert "speedup_vs_reference" not in v3 and "rungs" not in v3


def test_history_pages_and_says_where_the_next_page_starts(workspace):
    runs = api.history("add", workspace)
    first = views.history_doc("add", runs, offset=0, limit=2)
    assert [r["run"] for r in first["runs"]] == [1, 2] and first["next_offset"] == 2
    last = views.history_doc("add", runs, offset=4, limit=2)
    assert [r["run"] for r in last["runs"]] == [5] and last["next_offset"] is None
    assert last["runs"][0]["parent_run"] == 2  # looked up among every run, not the page's


def test_lineage_is_the_chain_of_parents_each_against_its_own(workspace):
    chain = api.lineage(3, workspace)
    assert [r.id for r in chain] == [3, 2, 1]
    doc = views.show_doc(chain[0], chain)
    assert [(r["run"], r["parent_run"]) for r in doc["lineage"]] == [(3, 2), (2, 1), (1, None)]
    assert doc["lineage"][1]["speedup_vs_parent"] == pytest.approx(2.0)
    assert [r.id for r in api.lineage(4, workspace)] == [4]  # v1 again: no parent
    assert "lineage" not in views.show_doc(chain[0])


def test_history_table_reads_as_a_person_compares_versions(workspace):
    console = Console(width=220, record=True, color_system=None)
    console.print(render.history(api.history("add", workspace)))
    lines = [[cell.strip() for cell in re.split("[┃│]", line)] for line in console.export_text().splitlines()]
    assert lines[0] == [
        "run", "when", "solution", "hash", "backend", "parent", "verdict",
        "n=1024 ms", "n=1048576 ms", "x ref", "x parent", "roofline", "wall_s",
    ]  # fmt: skip
    rows = {cells[0]: cells[:-1] for cells in lines[2:]}
    assert rows["2"][5:] == ["1", "PASS", "0.004", "0.1", "x3.16", "x2.00", "5%"]
    assert rows["3"][5:] == ["2", "FAIL at correct: 12 of 1024 elements differ", "", "", "", "", ""]
    assert rows["5"][5:] == ["2", "PASS", "0.002", "0.08", "x5.00", "x1.58", "8%"]
    assert rows["1"][5] == "" and rows["1"][10] == ""
    assert all(float(cells[-1]) >= 0 for cells in lines[2:])


def test_history_table_leaves_out_figures_no_version_has(tmp_path):
    store = Store(tmp_path)
    run = store.begin("add", "problems/add", Solution("v1.py", "e" * 64, "torch"), H200, 7, {}, source="x")
    store.add_rung(run, RungResult("correct", Status.OK, "all match"))
    store.finish(run)
    store.close()
    console = Console(width=220, record=True, color_system=None)
    console.print(render.history(api.history("add", tmp_path)))
    header = [cell.strip() for cell in re.split("[┃│]", console.export_text().splitlines()[0])]
    assert header == ["run", "when", "solution", "hash", "backend", "parent", "verdict", "wall_s"]


def test_lineage_prints_nearest_first(workspace):
    chain = api.lineage(5, workspace)
    console = Console(width=160, record=True, color_system=None)
    render.print_lineage(console, views.lineage_rows(chain))
    assert [line.split() for line in console.export_text().splitlines()] == [
        ["lineage", "(nearest", "first):"],
        ["run", "5", "PASS", "x5.00", "ref", "x1.58", "parent", "8%", "roofline", "v4.py"],
        ["run", "2", "PASS", "x3.16", "ref", "x2.00", "parent", "5%", "roofline", "v2.py"],
        ["run", "1", "PASS", "x1.58", "ref", "3%", "roofline", "v1.py"],
    ]
    console = Console(width=160, record=True, color_system=None)
    render.print_lineage(console, views.lineage_rows(chain[2:]))
    assert console.export_text().strip() == "lineage: no parent version"


def test_rung_history_json_is_the_document(workspace):
    done = subprocess.run(
        [sys.executable, "-m", "rung", "history", "add", "--json", "-w", str(workspace)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert json.loads(done.stdout) == json.loads(
        json.dumps(views.history_doc("add", api.history("add", workspace)))
    )


def test_times_from_another_gpu_model_are_never_compared(tmp_path):
    with Store(tmp_path) as store:
        v1 = _timed(store, "v1.py", "a" * 64, None, [0.008, 0.200])
        v2 = _timed(store, "v2.py", "b" * 64, "a" * 64, [0.006, 0.150], device=H100)
        v3 = _timed(store, "v3.py", "c" * 64, "b" * 64, [0.003, 0.075], device=H100)
    why = "run 1 ran on NVIDIA H200, run 2 on NVIDIA H100 80GB HBM3: times from different devices are not compared"
    rows = {r["run"]: r for r in views.versions(api.history("add", tmp_path))}
    assert rows[2]["not_compared"] == why and rows[2]["device"] == "NVIDIA H100 80GB HBM3"
    assert "speedup_vs_parent" not in rows[2] and all("speedup_vs_parent" not in c for c in rows[2]["cases"])
    assert rows[2]["speedup_vs_reference"] > 0  # timed beside it on its own GPU: still a figure
    assert rows[3]["speedup_vs_parent"] == pytest.approx(2.0) and "not_compared" not in rows[3]
    across = views.diff_doc(v1, v2, "x", "x")
    assert across["not_compared"] == why and all("ratio" not in row for row in across["bench"])
    assert across["a"]["device"] == "NVIDIA H200" and across["b"]["device"] == "NVIDIA H100 80GB HBM3"
    same = views.diff_doc(v2, v3, "x", "x")
    assert "not_compared" not in same and [r["ratio"] for r in same["bench"]] == pytest.approx([0.5, 0.5])
    console = Console(width=200, record=True)
    console.print(render.history(api.history("add", tmp_path)))
    render.print_diff(console, across)
    text = console.export_text()
    assert "other GPU" in text and why in text


def test_history_show_and_diff_start_no_process(workspace, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError(f"a process was started: {args}")

    monkeypatch.setattr(subprocess, "Popen", refuse)
    assert len(api.history("add", workspace)) == 5
    assert api.show(2, workspace).id == 2 and len(api.lineage(2, workspace)) == 2
    assert api.diff(1, 2, workspace)["bench"]


def _built(store: Store, path: str, sha: str, parent: str | None, regs: int, sass: int, loads: dict) -> Run:
    """A version built and dumped on a machine with no GPU: compile's and dump's figures only."""
    run = store.begin("add", "problems/add", Solution(path, sha, "cuda", parent), H200, 7, {}, source="x")
    compiled = {"max_registers": regs, "max_shared_bytes": 0, "spill_instructions": 0}
    store.add_rung(run, RungResult("compile", Status.OK, "built", compiled))
    facts = {"instructions": sass, "tensor_core": {}, "global_access_bits": loads, "local_memory_ops": 0}
    # what a solution's build could plant: a kernel whose facts are not numbers is left out
    odd = {"instructions": "many", "tensor_core": {"HGMMA": True}, "global_access_bits": {"ldg_x": 9}}
    store.add_rung(run, RungResult("dump", Status.OK, "facts", {"kernels": {"k": facts, "odd": odd}}))
    store.finish(run)
    return run


def test_history_and_diff_show_the_build_figures_that_changed(tmp_path):
    store = Store(tmp_path)
    _built(store, "v1.py", "a" * 64, None, 16, 40, {"ldg_64": 4, "stg_64": 2})
    _built(store, "v2.py", "b" * 64, "a" * 64, 26, 56, {"ldg_128": 2, "stg_128": 1})
    store.close()
    runs = api.history("add", tmp_path)
    assert views.versions(runs)[1]["build"] == {
        "registers": 26,
        "shared_bytes": 0,
        "spills": 0,
        "sass_instructions": 56,
        "local_memory_ops": 0,
        "tensor_core_instructions": 0,
        "ldg_128": 2,
        "stg_128": 1,
    }
    console = Console(width=240, record=True, color_system=None)
    console.print(render.history(runs))
    cells = [[c.strip() for c in re.split("[┃│]", line)] for line in console.export_text().splitlines()]
    column = cells[0].index("build (vs parent)")
    assert [row[column] for row in cells[2:]] == [
        "16 regs, 40 SASS, ld 64b",
        "26 regs (+10), 56 SASS (+16), ld 128b",
    ]
    doc = api.diff(1, 2, tmp_path)
    assert doc["build"] == [
        {"figure": "registers", "a": 16, "b": 26},
        {"figure": "sass_instructions", "a": 40, "b": 56},
        {"figure": "ldg_64", "a": 4, "b": None},
        {"figure": "stg_64", "a": 2, "b": None},
        {"figure": "ldg_128", "a": None, "b": 2},
        {"figure": "stg_128", "a": None, "b": 1},
    ]
    console = Console(width=240, record=True, color_system=None)
    render.print_diff(console, doc)
    assert console.export_text().splitlines()[-1] == (
        "  build: registers 16 → 26, sass_instructions 40 → 56, ldg_64 4 → -, stg_64 2 → -, ldg_128 - → 2,"
        " stg_128 - → 1"
    )


def _profiled(store: Store, verdict: str, ncu_us: float) -> Run:
    """v4 timed, with its profile rung's witness of the last case as the judge writes it."""
    run = _timed(store, "v4.py", "d" * 64, "b" * 64, [0.002, 0.080])
    witness = {"case": CASES[-1], "bench_us": 80.0, "ncu_us": ncu_us, "verdict": verdict}
    status = Status.FAILED if verdict == "contradicted" else Status.OK
    said = "bench's figure for case {'n': 1048576}, 80.0 us, reads 20% under ...\n1 kernel"
    run.rungs.append(RungResult("profile", status, said, {"witness": witness}))
    return run


@pytest.mark.parametrize(("verdict", "ncu_us"), [("witnessed", 81.5), ("contradicted", 100.0)])
def test_each_bench_figure_is_marked_witnessed_or_not(tmp_path, verdict, ncu_us):
    """Only the profiled case has a witness; every other figure is marked unwitnessed, in --json
    and in the verdict's lines; a contradicted one says why."""
    run = _profiled(Store(tmp_path), verdict, ncu_us)
    small, profiled = views.solution_json(run)["bench_figures"]
    assert small == {"case": CASES[0], "median_ms": 0.002, "witness": "unwitnessed"}
    assert profiled["witness"] == verdict and profiled["ncu_ms"] == pytest.approx(ncu_us / 1e3)
    assert ("why" in profiled) == (verdict == "contradicted")
    if verdict == "contradicted":
        assert profiled["why"].startswith("bench's figure for case {'n': 1048576}, 80.0 us")
    text = render.verdict(run).plain.splitlines()[-1]
    assert (
        text
        == f"  figures: n=1024 0.002 ms unwitnessed, n=1048576 0.08 ms {verdict} (Nsight Compute {ncu_us / 1e3:.4g} ms)"
    )


def test_a_witness_taken_apart_from_the_run_marks_it_and_an_untimed_run_has_no_figures(tmp_path):
    store = Store(tmp_path)
    run = _timed(store, "v4.py", "d" * 64, "b" * 64, [0.002, 0.080])
    assert [m["witness"] for m in views.solution_json(run)["bench_figures"]] == ["unwitnessed"] * 2
    apart = {run.id: {"case": CASES[-1], "ncu_us": 81.0, "verdict": "witnessed", "profile_run": 9}}
    marks = views.solution_json(run, apart)["bench_figures"]
    assert marks[1] == {
        "case": CASES[-1],
        "median_ms": 0.080,
        "witness": "witnessed",
        "ncu_ms": 0.081,
        "profile_run": 9,
    }
    untimed = store.begin("add", "problems/add", Solution("v5.py", "e" * 64, "triton"), H200, 7, {}, "x")
    assert views.solution_json(untimed)["bench_figures"] == [] and render.witnessed(untimed) == ""
