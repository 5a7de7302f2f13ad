"""The docs match the code: every knob in docs/env_vars.md, every ladder rung in the README."""

from __future__ import annotations

import re

from rung.knobs import KNOBS
from rung.ladder import NAMES
from tests.conftest import ROOT


def test_env_vars_table_lists_exactly_the_knobs():
    text = (ROOT / "docs" / "env_vars.md").read_text()
    assert set(re.findall(r"^\| `(RUNG_\w+)`", text, re.M)) == set(KNOBS)


def test_readme_names_every_rung_and_ci_runs_its_test_command():
    readme = (ROOT / "README.md").read_text()
    for name in NAMES:
        assert name in readme, name
    test_command = "pip install torch==2.13.0 -e '.[dev]' && make check"
    assert test_command in readme
    assert test_command in (ROOT / ".ci" / "run").read_text()


def test_nothing_but_knobs_reads_the_environment():
    offenders = []
    for path in (ROOT / "src" / "rung").rglob("*.py"):
        text = path.read_text()
        if path.name != "knobs.py" and re.search(
            r"os\.environ\.get|os\.getenv|os\.environ\[[^]]+\](?!\s*=)", text
        ):
            offenders.append(path.name)
    assert offenders == []
