"""The look at a solution before any judge starts: a syntax error fails load at once, a kernel
language whose extra is not installed SKIPs it naming the install line (never a FAILED load),
and a source that looks fine is left to the solution process."""

from __future__ import annotations

import time

import pytest

from rung import backends, precheck
from rung.spec import Status
from tests.conftest import FIXTURES

TINY = FIXTURES / "tiny"
EXTRAS = [b for b in backends.REGISTRY if b.EXTRA]


@pytest.mark.parametrize(
    ("source", "status", "says"),
    [
        ("def custom_kernel(x)\n    return x\n", Status.FAILED, "SyntaxError at s.py:1: expected ':'"),
        ("x = 1\n  y = 2\n", Status.FAILED, "SyntaxError at s.py:2: unexpected indent"),
        (
            "import torch\x00\n",
            Status.FAILED,
            "SyntaxError in s.py: source code string cannot contain null bytes",
        ),
    ],
)
def test_what_does_not_parse_fails_load_without_running_it(source, status, says):
    r = precheck.load_verdict("s.py", source)
    assert r is not None and (r.name, r.status, r.message) == ("load", status, says)


@pytest.mark.parametrize("backend", EXTRAS, ids=lambda b: b.BACKEND.value)
def test_a_language_not_installed_is_a_skip_naming_its_extra(backend, monkeypatch):
    top = backend.IMPORTS[0].split(".")[0]
    monkeypatch.setattr(precheck, "_installed", lambda name: name != top)
    r = precheck.load_verdict("s.py", f"import torch\nimport {backend.IMPORTS[-1]}\n")
    language, extra = backend.BACKEND.value, backend.EXTRA
    assert r is not None and r.status == Status.SKIPPED
    assert r.message == (
        f"{language} solution: {top} is not installed here; needs the {extra} extra: pip install 'rung[{extra}]'"
    )


def test_what_parses_and_is_installed_is_left_to_the_judge(monkeypatch):
    monkeypatch.setattr(precheck, "_installed", lambda name: True)
    assert (
        precheck.load_verdict("s.py", "import torch\nimport triton\ndef custom_kernel(x):\n    return x\n")
        is None
    )
    assert precheck.missing_extras("import torch\nimport no_such_package\n") == []  # not a kernel language


def test_a_climb_of_a_missing_language_is_unverified_at_once(climb, tmp_path, monkeypatch):
    """Every rung SKIPPED saying why, the verdict SKIPPED at load, not ok: a check of the README's
    install (no extras) reads the shipped CuTe DSL version as a skip, not a failure."""
    solution = tmp_path / "cute_twice.py"
    solution.write_text(
        "import torch\nimport cutlass.cute as cute\n\ndef custom_kernel(x):\n    return 2 * x\n"
    )
    monkeypatch.setattr(precheck, "_installed", lambda name: name != "cutlass")
    started = time.monotonic()
    run = climb(TINY, solution)
    assert time.monotonic() - started < 10  # no judge was asked anything
    load = run.rungs[0]
    assert load.status == Status.SKIPPED and load.message.endswith("pip install 'rung[cute]'")
    assert all(r.status == Status.SKIPPED for r in run.rungs)
    assert (run.verdict, run.outcome.value, run.why) == ("SKIPPED at load", "unverified", load.message)


def test_a_source_built_to_exhaust_the_parser_fails_load_and_the_controller_lives(climb, tmp_path):
    """100,000 unary minus signs overflow the parser's stack (MemoryError in CPython 3.11): looked
    at before anything else in the controller parses it, it is a FAILED load, not a crash."""
    deep = tmp_path / "deep.py"
    deep.write_text("x = " + "-" * 100_000 + "1\n\ndef custom_kernel(x):\n    return 2 * x\n")
    said = "deep.py is nested too deeply for Python's parser"
    r = precheck.load_verdict("deep.py", deep.read_text())
    assert r is not None and (r.status, r.message) == (Status.FAILED, said)
    run = climb(TINY, deep)
    assert (run.rungs[0].status, run.rungs[0].message, run.verdict) == (Status.FAILED, said, "FAIL at load")
