"""The docs match the code: every knob in docs/env_vars.md, every ladder rung in the README."""

from __future__ import annotations

import json
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


LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def broken_links(path):
    """The relative links in one Markdown file whose file, or whose #anchor in it, is missing."""
    broken = []
    for target in LINK.findall(path.read_text()):
        if re.match(r"[a-z]+:", target):
            continue
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / file_part).resolve() if file_part else path
        if not dest.exists():
            broken.append(target)
        elif anchor and dest.suffix == ".md":
            headings = re.findall(r"^#+ (.+)$", dest.read_text(), re.M)
            if anchor not in {_anchor(h) for h in headings}:
                broken.append(target)
    return broken


def test_every_relative_link_in_the_docs_resolves():
    pages = [ROOT / "README.md", *(ROOT / "docs").rglob("*.md")]
    assert {str(p.relative_to(ROOT)): broken_links(p) for p in pages if broken_links(p)} == {}


def test_a_missing_file_or_anchor_is_a_broken_link(tmp_path):
    (tmp_path / "there.md").write_text("# A heading\n")
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](there.md#a-heading) [gone](missing.md) [no](there.md#nope) [web](https://x.org/y)\n"
    )
    assert broken_links(page) == ["missing.md", "there.md#nope"]


def test_benchmarks_links_every_data_file_and_each_is_keyed_by_gpu():
    benchmarks = ROOT / "docs" / "BENCHMARKS.md"
    linked = {(benchmarks.parent / t).resolve() for t in LINK.findall(benchmarks.read_text())}
    data = sorted((ROOT / "docs" / "benchmarks").glob("*.json"))
    assert data and set(data) <= linked, sorted(str(d) for d in set(data) - linked)
    for path in data:
        by_gpu = json.loads(path.read_text())["by_gpu"]
        assert by_gpu and all(ms and all(m["rows"] for m in ms) for ms in by_gpu.values()), path
