"""A problem read as data (rung problem, MCP's problem_info) says what its judge loads, and reading
it runs none of its code: no judge, no torch."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

from rung import api, problem_data
from rung.errors import ProblemError
from rung.judge.formats import load_problem
from tests.conftest import FIXTURES, PROBLEMS

EVERY_FORMAT = [
    *sorted(p for p in PROBLEMS.iterdir() if (p / "problem.py").is_file()),
    FIXTURES / "tiny",
    FIXTURES / "slow_cases",  # its cases in cases.yml
    *sorted(p for p in (FIXTURES / "gpumode").iterdir() if (p / "task.yml").is_file()),
    *sorted(p for p in (FIXTURES / "kernelbench").glob("*.py") if p.name != "no_model.py"),
]


@pytest.mark.parametrize("path", EVERY_FORMAT, ids=lambda p: p.name)
def test_read_as_data_it_is_what_the_judge_loads(path):
    assert dataclasses.asdict(problem_data.read(path)) == dataclasses.asdict(load_problem(path).describe())


def test_reading_a_problem_imports_none_of_it_and_starts_no_process():
    code = (
        "import subprocess, sys\n"
        "def refuse(*a, **k): raise AssertionError('a process was started')\n"
        "subprocess.Popen = refuse\n"
        "from rung import api\n"
        f"for p in {[str(p) for p in EVERY_FORMAT]!r}: api.problem(p)\n"
        "print(sorted(m for m in ('torch', 'triton', 'yaml') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["['yaml']"]  # task.yml read; nothing a problem imports


def test_cases_built_by_code_are_refused_naming_the_line_and_cases_yml_takes_them(tmp_path):
    folder = tmp_path / "looped"
    folder.mkdir()
    (folder / "problem.py").write_text(
        "import torch\n"
        "DTYPE = torch.float16  # not data, and not asked to be\n"
        "N = 2**10\n"
        "TESTS = [{'n': n} for n in (1, N)]\n"
        "def generate_input(seed, device, n): ...\n"
        "def reference(x): ...\n"
    )
    with pytest.raises(ProblemError, match=r"problem.py:4: TESTS is not data \(\[\{'n': n\} for n"):
        problem_data.read(folder)
    (folder / "cases.yml").write_text(
        "tests: [{n: 1}, {n: 1024}]\nbenchmarks: [{n: 4096}]\ntolerance: {atol: 0.1}\n"
    )
    read = problem_data.read(folder)
    assert read.tests == [{"n": 1}, {"n": 1024}] and read.benchmarks == [{"n": 4096}]
    assert read.tolerance == {"atol": 0.1} and read.has_cost is False


def test_constant_expressions_are_evaluated_and_code_is_not():
    import ast

    bound = problem_data.constants(ast.parse("K = 4\nB = [{'n': 2**K * 3}, {'n': -K}]\nX = len(B)\n"))
    assert bound == {"K": 4, "B": [{"n": 48}, {"n": -4}]}  # X needs len(): left out
    with pytest.raises(problem_data.NotConstant, match="open"):
        problem_data.evaluate(ast.parse("open('/etc/passwd')", mode="eval").body, {})


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("no_tests", "defines no TESTS"),
        ("no_reference", "defines no function reference()"),
        ("empty", "no problem.py"),
    ],
)
def test_a_bad_problem_folder_is_refused_as_data_too(name, says):
    with pytest.raises(ProblemError, match=says):
        api.problem(FIXTURES / "bad_problems" / name)


def test_a_problem_is_named_alike_however_its_path_is_given(tmp_path, monkeypatch):
    monkeypatch.chdir(FIXTURES / "tiny")
    assert problem_data.problem_name(".") == "tiny"  # a relative path names the folder it resolves to
    assert problem_data.problem_name(FIXTURES / "kernelbench" / "matmul.py") == "matmul"  # a file: its stem
    assert problem_data.problem_name("softmax") == "softmax"  # no such path: a name as given
    assert problem_data.read(".").name == load_problem(".").name == "tiny"


@pytest.mark.parametrize(
    ("path", "named"),
    [
        (FIXTURES / "tiny", "native"),
        (FIXTURES / "gpumode" / "vectorsum", "gpumode"),
        (FIXTURES / "kernelbench" / "matmul.py", "kernelbench"),
    ],
    ids=lambda x: getattr(x, "name", x),
)
def test_a_problem_s_format_is_told_from_its_files(path, named):
    assert problem_data.problem_format(path) == named


def test_a_folder_of_no_format_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("")
    with pytest.raises(ProblemError, match=r"no problem\.py"):
        problem_data.problem_format(tmp_path)
    with pytest.raises(ProblemError, match="neither a problem folder"):
        problem_data.problem_format(tmp_path / "notes.txt")
