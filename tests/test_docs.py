"""The docs match the code: every knob in docs/env_vars.md, the ladder in README.md and docs/LADDER.md,
every relative link live, the README a front page."""

from __future__ import annotations

import json
import re

from rung.knobs import KNOBS
from rung.ladder import NAMES
from tests.conftest import ROOT


def test_env_vars_table_lists_exactly_the_knobs():
    text = (ROOT / "docs" / "env_vars.md").read_text()
    assert set(re.findall(r"^\| `(RUNG_\w+)`", text, re.M)) == set(KNOBS)


def test_ci_runs_the_readmes_test_command():
    test_command = "pip install torch==2.13.0 -e '.[dev]' && make check"
    assert test_command in (ROOT / "README.md").read_text()
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
    pages = [ROOT / "README.md", ROOT / "bench" / "README.md", *(ROOT / "docs").rglob("*.md")]
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


README_MAX_LINES = 160  # a front page: the manual is in docs/


def readme_ladder(path) -> list[str]:
    """The rung names in the first column of the table under a page's `## The ladder`."""
    section = path.read_text().partition("\n## The ladder\n")[2].split("\n## ")[0]
    return re.findall(r"^\| (\w+) \|", section, re.M)[1:]  # [1:]: the header row


def ladder_sections(path) -> list[str]:
    """The rung sections of a page: its `## ` headings that are one lower-case word."""
    return re.findall(r"^## ([a-z]+)$", path.read_text(), re.M)


def ladder_drift(found: list[str]) -> list[str]:
    """How a page's rung list differs from the ladder's: missing, unknown, or out of order."""
    drift = [f"missing: {n}" for n in NAMES if n not in found]
    drift += [f"not a rung: {n}" for n in found if n not in NAMES]
    if not drift and found != list(NAMES):
        drift.append(f"order: {found}")
    return drift


def test_the_readme_table_and_ladder_md_list_every_rung_in_the_ladders_order():
    assert ladder_drift(readme_ladder(ROOT / "README.md")) == []
    assert ladder_drift(ladder_sections(ROOT / "docs" / "LADDER.md")) == []


def test_a_missing_an_unknown_or_a_reordered_rung_is_drift(tmp_path):
    rows = "".join(f"| {n} | does | runs |\n" for n in NAMES if n != "guard")
    page = tmp_path / "README.md"
    page.write_text(
        f"# x\n\n## The ladder\n\n| rung | checks | cpu |\n| --- | --- | --- |\n{rows}\n## Next\n"
    )
    assert readme_ladder(page) == [n for n in NAMES if n != "guard"]
    assert ladder_drift(readme_ladder(page)) == ["missing: guard"]
    doc = tmp_path / "LADDER.md"
    doc.write_text("".join(f"## {n}\n\ntext\n\n" for n in (*NAMES, "teleport")) + "## How a climb runs\n")
    assert ladder_drift(ladder_sections(doc)) == ["not a rung: teleport"]
    assert ladder_drift([NAMES[1], NAMES[0], *NAMES[2:]]) == [f"order: {[NAMES[1], NAMES[0], *NAMES[2:]]}"]


def test_the_readme_is_a_front_page():
    assert len((ROOT / "README.md").read_text().splitlines()) <= README_MAX_LINES


def missing_files(path) -> list[str]:
    """The repository paths a page names in backticks (`src/...`, `tests/...`, `bench/...`) that do
    not exist: LADDER.md names each rung's files, and a move must move the page too."""
    named = re.findall(r"`((?:src|tests|bench|problems)/[\w./-]+)`", path.read_text())
    return [n for n in named if not (ROOT / n).exists()]


def test_ladder_md_names_only_files_that_exist():
    assert missing_files(ROOT / "docs" / "LADDER.md") == []


def test_a_page_naming_a_file_that_is_gone_is_caught(tmp_path):
    page = tmp_path / "LADDER.md"
    page.write_text("Files: `src/rung/ladder.py`, `src/rung/judge/rungs/teleport.py`.\n")
    assert missing_files(page) == ["src/rung/judge/rungs/teleport.py"]
