"""GPU MODE folders and KernelBench files climb the same ladder; their bad inputs are one line."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from rung import knobs, runner
from rung.errors import ProblemError
from rung.spec import Status
from tests.conftest import FIXTURES, rung_of

GPUMODE = FIXTURES / "gpumode"
KERNELBENCH = FIXTURES / "kernelbench"


@pytest.mark.parametrize(
    ("problem", "solution", "verdict", "says"),
    [
        ("vectorsum", "vectorsum_triton.py", "PASS", ""),
        ("vectorsum", "vectorsum_half.py", "FAIL at correct", "the problem's own check: 1 mismatches"),
        ("grayscale", "grayscale_torch.py", "PASS", ""),
        ("grayscale", "grayscale_equal_weights.py", "FAIL at correct", "the problem's own check"),
        ("matmul", "matmul_torch.py", "PASS", ""),
        ("matmul", "matmul_transposed.py", "FAIL at correct", "the problem's own check"),
    ],
)
def test_gpumode_verdicts_follow_check_implementation(climb, problem, solution, verdict, says):
    run = climb(GPUMODE / problem, GPUMODE / "submissions" / solution)
    assert run.verdict == verdict, [(r.name, r.status.value, r.message) for r in run.rungs]
    if says:
        assert says in rung_of(run, "correct").message
    else:
        assert rung_of(run, "scale").status == Status.OK
        assert "max_abs_err" in rung_of(run, "correct").metrics  # rung's own figures beside the verdict


def test_gpumode_destination_passing_output_is_poisoned_and_exempt_from_the_guard(climb):
    run = climb(GPUMODE / "vectorsum", GPUMODE / "submissions" / "vectorsum_triton.py")
    guard = rung_of(run, "guard")
    assert guard.status == Status.OK, guard.message  # writing the preallocated output is the contract
    assert rung_of(run, "compile").status == Status.OK


def test_gpumode_output_buffer_the_reference_ignores_may_be_written_and_returned(climb):
    """GPU MODE's matmul returns a new tensor and never touches `c`; the intended solution writes
    `c` and returns it, which is no alias of a real input."""
    run = climb(GPUMODE / "matmul_out", GPUMODE / "submissions" / "matmul_out_into_c.py")
    assert run.verdict == "PASS", [(r.name, r.status.value, r.message) for r in run.rungs]
    assert rung_of(run, "guard").metrics["checks"]["no_alias"] == "ok"


def test_gpumode_returning_a_real_input_is_still_an_alias(climb):
    run = climb(GPUMODE / "prefixsum", GPUMODE / "submissions" / "prefixsum_returns_input.py")
    guard = rung_of(run, "guard")
    assert run.verdict == "FAIL at guard"
    assert "no_alias: output 0 shares memory with input 0" in guard.message


def test_gpumode_own_check_decides_and_rungs_dtype_rule_warns(climb):
    """prefixsum: float32 written where the reference returns float64, which GPU MODE accepts."""
    run = climb(GPUMODE / "prefixsum", GPUMODE / "submissions" / "prefixsum_into_output.py")
    assert run.verdict == "PASS", [(r.name, r.status.value, r.message) for r in run.rungs]
    correct = rung_of(run, "correct")
    warning = "dtype torch.float32, expected torch.float64 (the problem's own check decides"
    assert any(warning in w for w in correct.metrics["warnings"])
    assert "warning: " + warning in correct.message


def test_gpumode_another_shape_of_as_many_elements_goes_to_the_problems_own_check(climb):
    run = climb(GPUMODE / "prefixsum", GPUMODE / "submissions" / "prefixsum_column.py")
    assert rung_of(run, "run").status == Status.OK  # a warning there, not a failure
    assert any("shape (1023, 1), expected (1023,)" in w for w in rung_of(run, "run").metrics["warnings"])
    correct = rung_of(run, "correct")
    assert correct.status == Status.FAILED
    assert "the problem's own check: shape (1023, 1) != (1023,)" in correct.message


def test_gpumode_strict_mode_fails_what_rungs_rules_only_warned_of(climb):
    with knobs.scoped(RUNG_STRICT=1):
        run = climb(GPUMODE / "prefixsum", GPUMODE / "submissions" / "prefixsum_into_output.py")
    assert run.verdict == "FAIL at run"
    assert rung_of(run, "run").message == "dtype torch.float32, expected torch.float64"


def test_kernelbench_own_tolerance_decides_and_rungs_norm_wise_error_warns(climb):
    run = climb(KERNELBENCH / "softmax.py", KERNELBENCH / "solutions" / "softmax_scaled.py")
    assert run.verdict == "PASS", [(r.name, r.status.value, r.message) for r in run.rungs]
    correct = rung_of(run, "correct")
    assert correct.metrics["trials"] == 5  # KernelBench's own count
    (warning,) = correct.metrics["warnings"]
    assert "rung's own policy would not:" in warning and "norm-wise relative error 1.0e-03" in warning
    with knobs.scoped(RUNG_STRICT=1):
        strict = climb(KERNELBENCH / "softmax.py", KERNELBENCH / "solutions" / "softmax_scaled.py")
    assert strict.verdict == "FAIL at correct"
    says = rung_of(strict, "correct").message
    assert "rung's own policy (RUNG_STRICT=1):" in says and "norm-wise relative error 1.0e-03" in says


def test_gpumode_listed_seed_is_checked_besides_fresh_ones(climb):
    run = climb(GPUMODE / "vectorsum", GPUMODE / "submissions" / "vectorsum_half.py")
    assert "(seed 11)" in rung_of(run, "correct").message  # the first trial uses task.yml's seed


@pytest.mark.parametrize(
    ("problem", "solution", "verdict"),
    [
        ("relu.py", "relu_triton.py", "PASS"),
        ("relu.py", "relu_leaky.py", "FAIL at correct"),
        ("softmax.py", "softmax_torch.py", "PASS"),
        ("softmax.py", "softmax_wrong_dim.py", "FAIL at correct"),
        ("matmul.py", "matmul_linear.py", "PASS"),
        ("matmul.py", "matmul_fresh_weights.py", "FAIL at correct"),
    ],
)
def test_kernelbench_verdicts(climb, problem, solution, verdict):
    run = climb(KERNELBENCH / problem, KERNELBENCH / "solutions" / solution)
    assert run.verdict == verdict, [(r.name, r.status.value, r.message) for r in run.rungs]
    if verdict == "FAIL at correct":  # KernelBench's own allclose decided, with its figures
        assert re.search(
            r"outside KernelBench's atol=rtol=0.0001 \(max difference [\d.e+-]+, mean ",
            rung_of(run, "correct").message,
        )


def test_kernelbench_triton_solution_compiles_and_launches(climb):
    run = climb(KERNELBENCH / "relu.py", KERNELBENCH / "solutions" / "relu_triton.py")
    assert rung_of(run, "compile").status == Status.OK
    assert rung_of(run, "guard").metrics["checks"]["kernel_launched"] == "ok"


def test_kernelbench_solution_without_model_new(climb):
    run = climb(KERNELBENCH / "relu.py", KERNELBENCH / "solutions" / "no_model_new.py")
    load = rung_of(run, "load")
    assert load.status == Status.FAILED and load.message == "no_model_new.py defines no ModelNew"


@pytest.mark.parametrize(
    ("where", "says"),
    [
        (FIXTURES / "gpumode_bad" / "no_task", "no task.yml"),
        (FIXTURES / "gpumode_bad" / "not_yaml", "task.yml: not YAML"),
        (FIXTURES / "gpumode_bad" / "no_tests", "task.yml: has no tests:"),
        (KERNELBENCH / "no_model.py", "defines no Model"),
    ],
)
def test_bad_format_inputs_are_one_line(tmp_path, where, says):
    with pytest.raises(ProblemError) as e:
        runner.describe(where, tmp_path)
    assert says in str(e.value) and "\n" not in str(e.value)


def test_bad_gpumode_folder_exits_two_from_the_cli(tmp_path):
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "rung",
            "check",
            str(FIXTURES / "gpumode_bad" / "no_task"),
            str(GPUMODE / "submissions" / "matmul_torch.py"),
            "-w",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2 and "no task.yml" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("problem", "start", "candidate"),
    [
        (
            GPUMODE / "grayscale",
            GPUMODE / "submissions/grayscale_torch.py",
            GPUMODE / "submissions/grayscale_equal_weights.py",
        ),
        (
            KERNELBENCH / "softmax.py",
            KERNELBENCH / "solutions/softmax_torch.py",
            KERNELBENCH / "solutions/softmax_torch.py",
        ),
    ],
    ids=["gpumode", "kernelbench"],
)
def test_optimize_runs_on_both_formats(tmp_path, problem, start, candidate):
    if candidate == start:  # a version that only differs by a comment: the same kernel, a new version
        candidate = tmp_path / candidate.name
        candidate.write_text(start.read_text() + "# a second version\n")
    args = ["optimize", str(problem), "--agent", "replay", "--from", str(start), "--replay", str(candidate)]
    done = subprocess.run(
        [sys.executable, "-m", "rung", *args, "--json", "-w", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["best"]["ok"] and doc["reason"] == "the agent has nothing more to propose"
    (version,) = doc["candidates"]
    assert version["verdict"] == ("FAIL at correct" if "equal_weights" in candidate.name else "PASS")
    assert "/.rung/versions/" in version["path"]  # climbed as a stored version, away from the problem's files


def test_kernelbench_init_inputs_may_be_shapes(tmp_path):
    """KernelBench's LayerNorm passes its normalized_shape, a tuple, to the constructor."""
    from rung.judge.formats.kernelbench import KernelBenchProblem

    src = (FIXTURES / "kernelbench" / "relu.py").read_text()
    path = tmp_path / "shaped.py"
    path.write_text(
        src.replace("def get_init_inputs():\n    return []", "def get_init_inputs():\n    return [(4, 8)]")
    )
    assert KernelBenchProblem(path).solution_side(tmp_path / "lib").init_inputs == [(4, 8)]


def test_kernelbench_inputs_are_drawn_on_their_device_or_on_the_cpu_again(tmp_path):
    """get_inputs() draws under the device it is asked for; one that fails there (it needs host
    tensors) is drawn again on the CPU from the same seed; on the meta device, no second try."""
    import torch

    from rung.judge.formats.kernelbench import KernelBenchProblem

    src = (FIXTURES / "kernelbench" / "relu.py").read_text()
    picky = tmp_path / "picky.py"
    picky.write_text(
        src
        + "\n\nDRAWS = []\n\n\ndef get_inputs():\n"
        + "    DRAWS.append(torch.get_default_device().type)\n"
        + "    if len(DRAWS) == 1:\n        raise RuntimeError('wants host tensors')\n"
        + "    return [torch.randn(4, 8)]\n"
    )
    problem = KernelBenchProblem(picky)
    (x,) = problem.inputs({}, 7, "cpu")
    torch.manual_seed(7)
    assert torch.equal(x, torch.randn(4, 8)) and problem.module.DRAWS == ["cpu", "cpu"]
    with pytest.raises(RuntimeError, match="wants host tensors"):
        problem.module.DRAWS.clear()
        problem.inputs({}, 7, "meta")
    assert problem.module.DRAWS == ["meta"]


def test_kernelbench_check_takes_the_reference_run_the_judge_has(monkeypatch):
    import torch

    from rung.judge.formats import load_problem

    problem = load_problem(KERNELBENCH / "relu.py")
    x = torch.randn(16, 1000)
    want = torch.relu(x)
    runs = []
    real = problem.reference
    monkeypatch.setattr(problem, "reference", lambda inputs: runs.append(1) or real(inputs))
    assert problem.check((x,), want.clone(), want) == (True, "")
    ok, says = problem.check((x,), want * 1.01, want)
    assert not ok and "outside KernelBench's atol=rtol=0.0001" in says
    assert runs == []  # Model ran for neither: the judge's run of it was taken
    assert problem.check((x,), want.clone())[0] and runs == [1]  # without it, Model runs
