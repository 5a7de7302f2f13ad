"""`rung context`: the right file and line first, re-adding replaces, any query is safe to search."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rung.context import ContextIndex, _chunks
from rung.errors import UsageError

MD = "# Notes\n\nSome words.\n\nThe swizzle pattern avoids bank conflicts in shared memory.\n"
PY = "import triton\n\n\ndef helper():\n    pass\n\n\ndef kernel(x):\n    return tl.dot(x, x)  # wgmma\n"
CU = "\n".join(["// filler"] * 59 + ['asm volatile("cp.async.bulk.tensor.2d");', "// end"]) + "\n"


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    (folder / "sub").mkdir(parents=True)
    (folder / "notes.md").write_text(MD)
    (folder / "kernel.py").write_text(PY)
    (folder / "sub" / "copy.cu").write_text(CU)
    (folder / "blob.bin").write_bytes(b"swizzle\0\0")
    (folder / ".hidden").mkdir()
    (folder / ".hidden" / "secret.md").write_text("swizzle\n")
    return folder


@pytest.fixture
def index(tmp_path: Path):
    index = ContextIndex(tmp_path / "ws")
    yield index
    index.close()


def test_search_finds_the_file_and_line(index, docs):
    assert index.add(str(docs)) == 4  # the .cu file is two overlapping snippets
    top = index.search("swizzle bank")[0]
    assert (Path(top.path).name, top.line, top.source) == ("notes.md", 1, str(docs))
    assert "bank conflicts" in top.text
    top = index.search("tl.dot")[0]
    assert Path(top.path).name == "kernel.py" and top.text.startswith("import triton")
    top = index.search("cp.async.bulk")[0]
    assert (Path(top.path).name, top.line) == ("copy.cu", 36)
    assert top.text.splitlines()[60 - top.line] == 'asm volatile("cp.async.bulk.tensor.2d");'
    assert {Path(s.path).name for s in index.search("swizzle", 20)} == {"notes.md"}


def test_any_word_then_any_token_when_no_snippet_has_every_word(index, docs):
    index.add(str(docs))
    assert Path(index.search("swizzle nowhere-to-be-found")[0].path).name == "notes.md"
    assert Path(index.search("wgmma.mma_async")[0].path).name == "kernel.py"


def test_adding_again_replaces(index, docs):
    index.add(str(docs))
    (docs / "notes.md").write_text("nothing here\n")
    assert index.add(str(docs)) == 4
    assert index.sources() == [(str(docs), 4)]
    assert index.search("swizzle") == []


@pytest.mark.parametrize(
    "query", ["tl.dot", "num_warps=8", '"', 'a "b', "a AND (", "*", "-", "NEAR(x y)", "x\0y"]
)
def test_awkward_queries_do_not_raise(index, docs, query):
    index.add(str(docs))
    assert isinstance(index.search(query), list)


def test_empty_query_and_unknown_target_are_usage_errors(index):
    with pytest.raises(UsageError, match="empty query"):
        index.search("  ")
    with pytest.raises(UsageError, match="no_such_pkg_x: no such file, folder or installed package"):
        index.add("no_such_pkg_x")
    with pytest.raises(UsageError):
        index.add("rung.no_such_module")


def test_an_installed_package_is_indexed_by_name(index):
    count = index.add("json")
    assert count > 0 and index.sources() == [("json", count)]
    assert any(Path(s.path).parent.name == "json" for s in index.search("JSONDecodeError"))
    assert index.add("rung.agents.replay") > 0


def test_a_package_is_located_without_importing_it(index, tmp_path, monkeypatch):
    (tmp_path / "boom" / "inner").mkdir(parents=True)
    (tmp_path / "boom" / "__init__.py").write_text("raise RuntimeError('imported')\n")
    (tmp_path / "boom" / "inner" / "__init__.py").write_text("raise RuntimeError('imported')\n")
    (tmp_path / "boom" / "inner" / "atoms.py").write_text("# the copy atom\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert index.add("boom.inner") == 2
    assert index.add("boom.inner.atoms") == 1
    assert {s.source for s in index.search("copy atom")} == {"boom.inner", "boom.inner.atoms"}


def test_python_snippets_start_at_top_level_definitions(tmp_path):
    source = "\n".join(
        [f"x{i} = {i}" for i in range(30)] + ["", "@decorator", "def f():"] + ["    pass"] * 30
    )
    path = tmp_path / "m.py"
    path.write_text(source)
    starts = [line for line, _ in _chunks(path)]
    assert starts == [1, 32]  # the second snippet starts at the decorator, with no overlap


def rung(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rung", "context", *args], capture_output=True, text=True)


def test_cli_add_search_sources(tmp_path, docs):
    ws = str(tmp_path / "ws")
    added = rung("add", str(docs), "--json", "-w", ws)
    assert added.returncode == 0, added.stderr
    assert json.loads(added.stdout) == {"schema": "rung/3", "added": {str(docs): 4}, "absent": []}
    found = rung("search", "cp.async.bulk", "--json", "-w", ws)
    assert found.returncode == 0, found.stderr
    doc = json.loads(found.stdout)
    assert doc["schema"] == "rung/3" and doc["query"] == "cp.async.bulk"
    assert set(doc["snippets"][0]) == {"path", "line", "text", "score", "source"}
    assert doc["snippets"][0]["line"] == 36
    human = rung("search", "swizzle", "-w", ws)
    assert human.stdout.splitlines()[0] == f"{docs / 'notes.md'}:1"
    sources = rung("sources", "--json", "-w", ws)
    assert json.loads(sources.stdout)["sources"] == [{"source": str(docs), "snippets": 4}]


def test_cli_unknown_target_exits_two_with_one_line(tmp_path):
    done = rung("add", "no_such_pkg_x", "-w", str(tmp_path))
    assert done.returncode == 2
    assert done.stderr.strip() == "rung: error: no_such_pkg_x: no such file, folder or installed package"
