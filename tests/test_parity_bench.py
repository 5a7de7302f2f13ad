"""The verdict-parity suite's CPU parts: agreement, the table, eval.py's output, rung's JSON, and the
generated solutions (bench/parity_*.py). Those that read the public problem sets skip where
.problem-sets/ is absent (it is fetched, never committed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
import torch

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))

import parity_gpumode
import parity_kernelbench
import parity_solutions
from parity_runner import Budget, BudgetSpent, loop_climb, parse_rung, run_capped, rung_checks
from parity_table import Row, Table, agreement

needs_pmpp = pytest.mark.skipif(not parity_gpumode.PMPP.is_dir(), reason=".problem-sets/gpumode absent")
needs_kernelbench = pytest.mark.skipif(
    not (parity_kernelbench.KERNELBENCH / "KernelBench").is_dir(), reason=".problem-sets/kernelbench absent"
)


def test_agreement_compares_only_verdicts_on_the_solution():
    assert agreement("PASS", "PASS") == (True, "agree")
    assert agreement("FAIL", "FAIL") == (True, "agree")
    assert agreement("FAIL", "PASS") == (False, "rung stricter")
    assert agreement("PASS", "FAIL") == (False, "rung laxer")
    assert agreement("SKIPPED", "PASS") == (None, "not comparable")
    assert agreement("PASS", "ERROR") == (None, "not comparable")


def test_table_writes_json_and_markdown_and_resumes(tmp_path):
    table = Table("t", "eval.py", {"RUNG_BASELINE": "none"})
    row = Row("sort_py", "submission.py", "shipped example", "PASS", {"verdict": "PASS", "seconds": 30.0}, {})
    row.rung = {
        "verdict": "FAIL",
        "said": "FAIL at guard",
        "reason": "guard: output | aliases input",
        "seconds": 10.0,
    }
    row.rung_warm = {"verdict": "PASS", "seconds": 5.0}
    row.rung_loop = {"said": "PASS", "seconds": 10.0}
    table.add(row)
    table.add(row)  # judged again: replaces, does not duplicate
    table.write(tmp_path)
    doc = json.loads((tmp_path / "parity.json").read_text())
    assert [(r["agree"], r["kind"]) for r in doc["rows"]] == [(False, "rung stricter")]
    md = (tmp_path / "parity.md").read_text()
    assert (
        "| sort_py | submission.py | shipped example | PASS | PASS | FAIL at guard | **NO** (rung stricter) |"
        in md
    )
    assert "output / aliases input" in md  # a pipe in a reason does not split the cell
    assert (
        "| sort_py | submission.py | 30.0 | 10.0 | 5.0 | 10.0 | 3.00x met | 6.00x met | 3.00x not met |" in md
    )
    assert "`RUNG_BASELINE=none`" in md
    assert Table.resume(tmp_path, "t", "eval.py", {}).done() == {"sort_py/submission.py"}
    lost = Row("sort_py", "other.py", "generated", "PASS", {"verdict": "PASS"}, {"verdict": "ERROR"})
    table.add(lost)  # rung gave no verdict (its judge out of a shared GPU's memory): judged again
    table.write(tmp_path)
    assert Table.resume(tmp_path, "t", "eval.py", {}).done() == {"sort_py/submission.py"}


def test_popcorn_output_from_a_file_descriptor():
    """eval.py writes `key: value` lines to POPCORN_FD; a multi-line error stays one value."""
    with tempfile.TemporaryFile("w+") as fd_file:
        writer = (
            "import os\n"
            "f = os.fdopen(int(os.environ['POPCORN_FD']), 'w')\n"
            "f.write('test-count: 2\\ntest.0.status: pass\\ntest.1.status: fail\\n')\n"
            "f.write('test.1.error: mismatch found: Number of mismatched elements: 3\\nERROR AT (0,): 1.0 2.0\\n')\n"
            "f.write('check: fail\\n')\n"
        )
        env = {**os.environ, "POPCORN_FD": str(fd_file.fileno())}
        subprocess.run([sys.executable, "-c", writer], env=env, pass_fds=(fd_file.fileno(),), check=True)
        fd_file.seek(0)
        said = parity_gpumode.parse_popcorn(fd_file.read())
    assert said["test-count"] == "2"
    assert said["test.1.error"] == "mismatch found: Number of mismatched elements: 3\nERROR AT (0,): 1.0 2.0"
    verdict, reason = parity_gpumode.mode_verdict(said, 112, "", False, 180)
    assert verdict == "FAIL"
    assert reason.startswith("test.1: mismatch found")
    assert parity_gpumode.mode_verdict({"check": "pass"}, 0, "", False, 180) == ("PASS", "")
    assert parity_gpumode.mode_verdict({}, 1, "Traceback\nValueError: boom\n", False, 180) == (
        "FAIL",
        "eval.py exited 1 with no verdict: ValueError: boom",
    )


def test_benchmark_precision_read_from_eval_py_and_rung_and_tabled(tmp_path):
    """Each side's timing precision per case (eval.py: the mean's standard error; rung: the
    median's), so the time-to-verdict table compares times at what each side was sure of."""
    said = {
        "benchmark-count": "3",
        "benchmark.0.runs": "100",
        "benchmark.0.mean": "20000.0",
        "benchmark.0.err": "300.0",
        "benchmark.1.runs": "12",
        "benchmark.1.mean": "5000000.0",
        "benchmark.1.err": "4000.0",
        "benchmark.2.status": "fail",
        "benchmark.2.error": "mismatch",
    }
    theirs = parity_gpumode.benchmark_cases(said)
    assert theirs == [
        {"mean_us": 20.0, "rel_err": 0.015, "runs": 100},
        {"mean_us": 5000.0, "rel_err": 0.0008, "runs": 12},
    ]
    bench = {
        "name": "bench",
        "status": "OK",
        "message": "",
        "metrics": {"cases": [{"median_ms": 0.02, "rel_median_sem": 0.004, "samples": 900}, {"error": "x"}]},
    }
    doc = {"solutions": [{"verdict": "PASS", "rungs": [bench]}]}
    ours = parse_rung(json.dumps(doc), "")["bench_cases"]
    assert ours == [{"median_us": 20.0, "rel_err": 0.004, "samples": 900}]
    table = Table("t", "eval.py", {})
    row = Row("grayscale_py", "submission.py", "shipped example", "PASS", {}, {})
    row.theirs = {"verdict": "PASS", "seconds": 8.0, "modes": {"benchmark": {"cases": theirs}}}
    row.rung = {"verdict": "PASS", "seconds": 16.0, "bench_cases": ours}
    row.rung_warm = {"verdict": "PASS", "seconds": 4.0}
    table.add(row)
    table.write(tmp_path)
    md = (tmp_path / "parity.md").read_text()
    assert (
        "| ±1.50% at worst (±0.08% at best), 12+ calls a case | ±0.40% at worst (±0.40% at best), 900+ calls a case |"
        in md
    )
    assert "bench_cases" not in parse_rung(json.dumps({"solutions": [{"verdict": "PASS", "rungs": []}]}), "")


def test_cases_file_is_what_eval_py_reads():
    text = parity_gpumode.cases_text([{"size": 127, "seed": 4242}, {"m": 64, "n": 32, "seed": 1}])
    assert text == "size: 127; seed: 4242\nm: 64; n: 32; seed: 1\n"


def test_rung_json_reduced_to_the_tables_terms():
    doc = {
        "solutions": [
            {
                "verdict": "FAIL at correct",
                "rungs": [
                    {"name": "load", "status": "OK", "message": "", "metrics": {}, "seconds": 0.5},
                    {
                        "name": "correct",
                        "status": "FAILED",
                        "message": "case 0: mismatch",
                        "metrics": {"warnings": ["float32 where the reference returns float64"]},
                        "seconds": 1.25,
                    },
                ],
            }
        ]
    }
    said = parse_rung(json.dumps(doc), "")
    assert (said["verdict"], said["reason"]) == ("FAIL", "correct: case 0: mismatch")
    assert said["warnings"] == ["correct: float32 where the reference returns float64"]
    assert said["rung_seconds"] == {"load": 0.5, "correct": 1.25}
    assert "profile_spent" not in said  # no profile ran
    spent = {"ncu_s": 24.1, "read_s": 1.5, "replay_passes": 76}
    doc["solutions"][0]["rungs"].append(
        {"name": "profile", "status": "OK", "message": "", "metrics": {"spent": spent}}
    )
    assert parse_rung(json.dumps(doc), "")["profile_spent"] == spent
    assert parse_rung("", "Traceback\nProblemError: bad task.yml\n") == {
        "verdict": "ERROR",
        "said": "no JSON",
        "reason": "ProblemError: bad task.yml",
    }


def test_the_judges_own_failure_is_no_verdict_on_the_solution():
    def check(status: str, message: str) -> str:
        rung = {"name": "bench", "status": status, "message": message}
        return str(
            parse_rung(json.dumps({"solutions": [{"verdict": "FAIL at bench", "rungs": [rung]}]}), "")[
                "verdict"
            ]
        )

    assert (
        check("ERROR", "rung's judge ran out of GPU memory (the judge held 50.0 GiB): CUDA out of memory")
        == "ERROR"
    )
    assert check("ERROR", "rung's judge failed: KeyError: 'x'") == "ERROR"
    # the solution's own error, and a failure the judge measured, stay verdicts on the solution
    assert check("ERROR", "OutOfMemoryError: CUDA out of memory (at zeroed.py:40 in forward)") == "FAIL"
    assert check("FAILED", "rung's judge measured 3 us of work in a 90 us call") == "FAIL"


def test_a_long_reason_keeps_its_end_where_the_cause_is_named():
    message = (
        "case 0: mismatch " + "ERROR AT (0, 1) " * 60 + "; the solution's convolution likely ran in TF32"
    )
    doc = {
        "solutions": [
            {
                "verdict": "FAIL at correct",
                "rungs": [{"name": "correct", "status": "FAILED", "message": message}],
            }
        ]
    }
    reason = parse_rung(json.dumps(doc), "")["reason"]
    assert reason.startswith("correct: case 0: mismatch") and reason.endswith("likely ran in TF32")
    assert len(reason) < len(message)


def test_budget_stops_a_run_and_a_spent_budget_starts_none():
    with pytest.raises(BudgetSpent):
        run_capped([sys.executable, "-c", "import time; time.sleep(30)"], 60, Budget(0.5))
    with pytest.raises(BudgetSpent):
        run_capped([sys.executable, "-c", "pass"], 60, Budget(0))
    capped = run_capped([sys.executable, "-c", "import time; time.sleep(30)"], 0.5, Budget(60))
    assert capped.timed_out


def _import(path: Path, name: str, extra_path: Path | None = None):
    import importlib.util

    if extra_path is not None:
        sys.path.insert(0, str(extra_path))
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        if extra_path is not None:
            sys.path.remove(str(extra_path))


@needs_pmpp
def test_gpumode_wrong_solutions_import_and_spoil_the_output(tmp_path):
    folder = parity_gpumode.PMPP / "vectoradd_py"
    found = {name: path for name, _, _, path in parity_gpumode.solutions(folder, tmp_path)}
    a, b = torch.ones(4, 4), torch.full((4, 4), 2.0)
    outputs = {}
    for spoiler in parity_solutions.SPOILERS:
        module = _import(found[f"generated/{spoiler}.py"], f"wrong_{spoiler}", folder)
        outputs[spoiler] = module.custom_kernel((a, b, torch.empty(4, 4)))
    assert torch.allclose(outputs["scaled"], torch.full((4, 4), 3.03))
    assert torch.count_nonzero(outputs["zeroed"]) == 0
    assert outputs["input"] is a


@needs_pmpp
def test_gpumode_stage_holds_what_task_yml_names(tmp_path):
    folder = parity_gpumode.PMPP / "sort_py"
    parity_gpumode.stage(folder, folder / "submission.py", tmp_path)
    names = {"submission.py", "task.py", "utils.py", "reference.py", "eval.py", "test.txt", "benchmark.txt"}
    assert {p.name for p in tmp_path.iterdir()} == names
    assert (tmp_path / "submission.py").read_text() == (folder / "submission.py").read_text()


@needs_kernelbench
def test_kernelbench_sample_is_fixed_and_its_solutions_behave(tmp_path):
    picked = parity_kernelbench.sample(parity_kernelbench.KERNELBENCH, set())
    assert [name.split("_")[0] for name, _ in picked] == [
        *(f"level1/{n}" for n in range(1, 100, 10)),
        *(f"level2/{n}" for n in range(1, 100, 20)),
    ]
    problem = next(path for name, path in picked if name.startswith("level1/21_"))  # Sigmoid
    found = {name: path for name, _, path, _ in parity_kernelbench.solutions(problem, tmp_path)}
    x = torch.randn(3, 5)
    same = _import(found["same.py"], "kb_same")
    want = same.Model()(x)
    assert torch.equal(same.ModelNew()(x), want)
    assert torch.allclose(_import(found["scaled.py"], "kb_scaled").ModelNew()(x), want * 1.01)
    assert torch.count_nonzero(_import(found["zeroed.py"], "kb_zeroed").ModelNew()(x)) == 0
    assert _import(found["input.py"], "kb_input").ModelNew()(x) is x
    with pytest.raises(NameError):  # Model is not in its own scope: only the evaluator's
        _import(found["scope.py"], "kb_scope")


@needs_kernelbench
def test_kernelbench_eval_imports_with_stand_ins_in_a_fresh_process():
    code = (
        "import parity_kernelbench as k\n"
        "m, stood_in = k.load_own_eval(k.KERNELBENCH / 'src')\n"
        "r = m.KernelExecResult(compiled=True, correctness=False, metadata={'correctness_issue': 'Output mismatch'})\n"
        "print(callable(m.eval_kernel_against_ref), k.own_verdict(r), k.own_verdict(m.KernelExecResult()))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "bench")}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().endswith("True ('FAIL', 'Output mismatch') ('FAIL', 'compile: ')")


def test_loop_climb_times_a_later_version_adopting_a_spare_judge(tmp_path):
    tiny = ROOT / "tests" / "fixtures" / "tiny"
    later = tmp_path / "good_v2.py"
    later.write_text((tiny / "solutions" / "good.py").read_text() + "\n# a later version\n")
    wrong = tiny / "solutions" / "wrong_shape.py"
    (tmp_path / "ws").mkdir()
    said = loop_climb(
        tiny, tiny / "solutions" / "good.py", later, tmp_path / "ws", tmp_path / "cache", Budget(600)
    )
    assert said["said"] == "PASS" and said["seconds"] > 0
    assert {"profile", "scopes"} <= set(said["left_out"])  # as the loop's candidates climb
    failed = loop_climb(tiny, later, wrong, tmp_path / "ws", tmp_path / "cache", Budget(600))
    assert failed["said"].startswith("FAIL")


def test_several_solutions_in_one_check_keep_their_own_verdicts(tmp_path):
    tiny = ROOT / "tests" / "fixtures" / "tiny"
    (tmp_path / "ws").mkdir()
    good, wrong = tiny / "solutions" / "good.py", tiny / "solutions" / "wrong_shape.py"
    said = rung_checks(tiny, [wrong, good], tmp_path / "ws", tmp_path / "cache", Budget(600))
    assert [s["verdict"] for s in said] == ["FAIL", "PASS"]
    assert said[0]["reason"].startswith(("run:", "correct:"))
    assert {s["batch"] for s in said} == {2} and said[0]["seconds"] == said[1]["seconds"] > 0


def _part(folder: Path, problems: list[str], complete: bool, settings: dict[str, str] | None = None) -> Path:
    table = Table("t", "KernelBench", settings or {"RUNG_BASELINE": "none"})
    for problem in problems:
        for solution in ("same.py", "scaled.py"):
            table.add(Row(problem, solution, "generated", "PASS", {"verdict": "PASS"}, {"verdict": "PASS"}))
    table.complete = complete
    table.write(folder)
    return folder


def test_merge_joins_parallel_runs_in_problem_order(tmp_path):
    a = _part(tmp_path / "a", ["level1/21_Sigmoid", "level2/1_Conv"], complete=True)
    b = _part(tmp_path / "b", ["level1/1_Matmul", "level1/11_4D"], complete=False)
    merged = Table.merge([a, b])
    assert [(r["problem"], r["solution"]) for r in merged.rows] == [
        (p, s)
        for p in ("level1/1_Matmul", "level1/11_4D", "level1/21_Sigmoid", "level2/1_Conv")
        for s in ("same.py", "scaled.py")
    ]
    assert not merged.complete  # one part stopped early
    again = _part(tmp_path / "c", ["level1/11_4D"], complete=True)  # b's rows, judged again
    doc = json.loads((again / "parity.json").read_text())
    for row in doc["rows"]:
        row["theirs"]["verdict"] = "FAIL"
    (again / "parity.json").write_text(json.dumps(doc))
    joined = Table.merge([a, b, again]).rows
    assert len(joined) == 8  # one row per solution, the later part's
    assert [r["theirs"]["verdict"] for r in joined if r["problem"] == "level1/11_4D"] == ["FAIL", "FAIL"]
    assert Table.merge([a]).complete


def test_merge_keeps_the_row_judged_last_not_the_stale_copy_a_resumed_part_carries(tmp_path):
    base = _part(tmp_path / "base", ["level1/21_Sigmoid"], complete=False)  # rung had no verdict there
    doc = json.loads((base / "parity.json").read_text())
    for row in doc["rows"]:
        row["rung"]["verdict"] = "ERROR"
    (base / "parity.json").write_text(json.dumps(doc))
    fresh = Table.resume(base, "t", "KernelBench", {"RUNG_BASELINE": "none"})  # judges 21 again
    for solution in ("same.py", "scaled.py"):
        fresh.add(
            Row("level1/21_Sigmoid", solution, "generated", "PASS", {"verdict": "PASS"}, {"verdict": "PASS"})
        )
    fresh.write(tmp_path / "fresh")
    other = Table.resume(base, "t", "KernelBench", {"RUNG_BASELINE": "none"})  # judges 31, carries 21 as was
    other.add(Row("level1/31_ELU", "same.py", "generated", "PASS", {"verdict": "PASS"}, {"verdict": "PASS"}))
    other.write(tmp_path / "other")
    for parts in ([tmp_path / "fresh", tmp_path / "other"], [tmp_path / "other", tmp_path / "fresh"]):
        rows = Table.merge(parts).rows
        assert [(r["problem"], r["rung"]["verdict"]) for r in rows] == [
            ("level1/21_Sigmoid", "PASS"),
            ("level1/21_Sigmoid", "PASS"),
            ("level1/31_ELU", "PASS"),
        ]


def test_merge_refuses_parts_judged_under_other_settings(tmp_path):
    a = _part(tmp_path / "a", ["level1/1_Matmul"], complete=True)
    b = _part(tmp_path / "b", ["level1/11_4D"], complete=True, settings={"RUNG_BASELINE": "compile"})
    with pytest.raises(ValueError, match="different"):
        Table.merge([a, b])


def test_merge_command_writes_the_joined_table(tmp_path):
    a = _part(tmp_path / "a", ["level1/21_Sigmoid"], complete=True)
    b = _part(tmp_path / "b", ["level1/1_Matmul"], complete=True)
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "parity_table.py"), str(tmp_path / "all"), str(a), str(b)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "4 solutions: agree: 4" in done.stdout
    rows = json.loads((tmp_path / "all" / "parity.json").read_text())["rows"]
    assert [r["problem"] for r in rows] == ["level1/1_Matmul"] * 2 + ["level1/21_Sigmoid"] * 2


KB_LIKE = """import torch

class Model(torch.nn.Module):
    def forward(self, x):
        return torch.sigmoid(x)

def get_inputs():
    return [torch.rand(4)]

def get_init_inputs():
    return []
"""


def test_kernelbench_evaluations_survive_a_run_cut_short(tmp_path, monkeypatch):
    """A budget spent in rung's half of a problem keeps KernelBench's evaluations for --resume;
    an evaluation that ERRORed is tried again."""
    problem = tmp_path / "21_Sigmoid.py"
    problem.write_text(KB_LIKE)
    evaluated: list[str] = []

    def own_eval(problem: Path, solution: Path, work: Path, budget: Budget) -> dict[str, object]:
        evaluated.append(solution.name)
        return {"verdict": "ERROR" if solution.name == "zeroed.py" else "FAIL", "seconds": 1.0}

    def spent(*args: object) -> list[dict[str, object]]:
        raise BudgetSpent

    monkeypatch.setattr(parity_kernelbench, "kernelbench_eval", own_eval)
    monkeypatch.setattr(parity_kernelbench, "rung_checks", spent)
    out, table = tmp_path / "out", Table("t", "KernelBench", {})
    with pytest.raises(BudgetSpent):
        parity_kernelbench.judge_problem("level1/21_Sigmoid", problem, out, table, Budget(600), batch=True)
    assert sorted(evaluated) == ["input.py", "same.py", "scaled.py", "scope.py", "zeroed.py"]
    kept = json.loads((out / parity_kernelbench.KEPT_EVALS).read_text())
    assert len(kept) == 4  # zeroed.py's ERROR is not kept

    said = {"verdict": "FAIL", "said": "FAIL at correct", "seconds": 1.0}
    monkeypatch.setattr(parity_kernelbench, "rung_checks", lambda problem, paths, *rest: [said] * len(paths))
    evaluated.clear()
    parity_kernelbench.judge_problem("level1/21_Sigmoid", problem, out, table, Budget(600), batch=True)
    assert evaluated == ["zeroed.py"]
    assert len(table.rows) == 5 and {r["theirs"]["verdict"] for r in table.rows} == {"FAIL", "ERROR"}

    problem.write_text(KB_LIKE + "\n# edited\n")  # other bytes: evaluated afresh
    evaluated.clear()
    parity_kernelbench.judge_problem(
        "level1/21_Sigmoid", problem, out, Table("t", "KernelBench", {}), Budget(600), batch=True
    )
    assert len(evaluated) == 5


def test_kernelbench_evaluations_at_once_keep_every_result(tmp_path, monkeypatch):
    """--own-jobs: evaluations run side by side, and none overwrites another's kept result."""
    problem = tmp_path / "21_Sigmoid.py"
    problem.write_text(KB_LIKE)
    running, most = [0], [0]
    lock = threading.Lock()

    def own_eval(problem: Path, solution: Path, work: Path, budget: Budget) -> dict[str, object]:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.2)
        with lock:
            running[0] -= 1
        return {"verdict": "PASS" if solution.name in ("same.py", "scope.py") else "FAIL", "seconds": 0.2}

    monkeypatch.setattr(parity_kernelbench, "kernelbench_eval", own_eval)
    monkeypatch.setattr(
        parity_kernelbench, "rung_checks", lambda problem, paths, *rest: [{"verdict": "FAIL"}] * len(paths)
    )
    out, table = tmp_path / "out", Table("t", "KernelBench", {})
    parity_kernelbench.judge_problem(
        "level1/21_Sigmoid", problem, out, table, Budget(600), batch=True, own_jobs=3
    )
    assert most[0] == 3
    assert len(json.loads((out / parity_kernelbench.KEPT_EVALS).read_text())) == 5
    assert {r["solution"]: r["theirs"]["verdict"] for r in table.rows} == {
        "same.py": "PASS",
        "scope.py": "PASS",
        "scaled.py": "FAIL",
        "zeroed.py": "FAIL",
        "input.py": "FAIL",
    }
