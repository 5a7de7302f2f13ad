"""Artifacts leave the solution's scratch folder once, judge-side (`judge/artifacts.py`,
`judge/build_copy.py`), and the controller's rungs read only those copies (`common/copies.py`).

Planted scratch files, one per refusal (a link, a link on the way, a path outside, a FIFO, a file
that changed after the build, one too large), each refused with its own reason; planted Triton
solutions for vector_add, climbed through compile and dump on this CPU: a link to
/proc/self/environ beside the build and SASS forged before the build hashed it (the build passes;
its facts are the CUBIN's), then a build that names a link, paths outside the scratch folder, a
linked folder and a name with control characters (each refused for its reason). No secret reaches the store, no file
changes outside the run's folder, and the dump's facts are those of the CUBIN that was built.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from rung import knobs, runner
from rung.common import safe_files
from rung.common.copies import folder as copies_folder
from rung.common.copies import read_copy
from rung.common.safe_files import Refused, safe_name, unique_name, write_new
from rung.derived.sass import dump
from rung.derived.sass_source import Sources
from rung.derived.trace import trace
from rung.executors.wire import pack_folder, unpack_folder
from rung.judge import artifacts
from rung.judge.artifacts import copy_out, keep_result
from rung.spec import RungResult, Status
from tests.conftest import FIXTURES, PROBLEMS, rung_of

PLANTED = FIXTURES / "hostile_artifacts"
VECTOR_ADD = PROBLEMS / "vector_add"
SECRET = "sk-planted-secret-must-not-leak"


def _run_dir(tmp_path: Path) -> tuple[Path, Path]:
    run_dir = tmp_path / "runs" / "7"
    (run_dir / "solution" / "compile").mkdir(parents=True)
    return run_dir, run_dir / "solution" / "compile"


def _plant(kind: str, compile_dir: Path, outside: Path) -> tuple[str, dict[str, str]]:
    """One planted scratch file of `kind`: the path the build names and the hashes it reports."""
    outside.write_text(f"OPENAI_API_KEY={SECRET}\n")
    path = compile_dir / "k.sass"
    if kind == "a symbolic link":
        path.symlink_to(outside)
    elif kind == "a link on the way":
        (compile_dir / "sub").symlink_to(outside.parent)
        path = compile_dir / "sub" / outside.name
    elif kind == "outside the scratch folder":
        path = outside
    elif kind == "walks up":
        path = compile_dir / ".." / ".." / outside.name
    elif kind == "not a regular file":
        os.mkfifo(path)  # a reader that opened it blocking would hang here
    elif kind == "a hard link":
        os.link(outside, path)  # what a filesystem without protected hard links would allow
    else:
        path.write_text("x" * 100)
    digest = hashlib.sha256(b"x" * 100).hexdigest()
    return str(path), {str(path): "0" * 64 if kind == "changed after build" else digest}


@pytest.mark.parametrize(
    ("kind", "says"),
    [
        ("a symbolic link", "k.sass refused: a symbolic link"),
        ("a link on the way", "secret.txt refused: a symbolic link"),
        ("outside the scratch folder", "secret.txt refused: outside the solution's scratch folder"),
        ("walks up", "secret.txt refused: outside the solution's scratch folder"),
        ("not a regular file", "k.sass refused: not a regular file"),
        ("a hard link", "k.sass refused: a hard link"),
        ("changed after build", "k.sass refused: changed after build"),
        ("too large", "k.sass refused: over 64 bytes"),
    ],
)
def test_a_planted_scratch_file_is_refused_for_its_reason(tmp_path, monkeypatch, kind, says):
    run_dir, compile_dir = _run_dir(tmp_path)
    path, built = _plant(kind, compile_dir, run_dir / "secret.txt")
    if kind == "too large":
        monkeypatch.setattr(artifacts, "MAX_FILE_BYTES", 64)
    copied = copy_out(run_dir, "compile", [path], built)
    assert copied.refusals("compile") == f"compile: artifact {says}"
    assert not copied.copies and not any((run_dir / "artifacts" / "compile").iterdir())


def test_an_honest_file_is_copied_with_its_hash_where_the_solution_cannot_write(tmp_path):
    run_dir, compile_dir = _run_dir(tmp_path)
    path, built = _plant("honest", compile_dir, run_dir / "secret.txt")
    copied = copy_out(run_dir, "compile", [path], built)
    (copy,) = copied.copies.values()
    assert copy == run_dir / "artifacts" / "compile" / "k.sass" and not copied.refused
    assert copied.sha256 == {"k.sass": built[path]} and read_copy(copy, 1000) == b"x" * 100


@pytest.mark.parametrize(
    ("name", "safe"),
    [("a/../../rung.db", "a_.._.._rung.db"), ("..", "_."), ("k\x1b[2J\n.sass", "k__2J_.sass"), ("", "_")],
)
def test_a_name_is_put_in_the_safe_alphabet(name, safe):
    assert safe_name(name) == safe
    assert unique_name(safe, {safe}) != safe


def test_a_write_never_goes_through_a_planted_link(tmp_path):
    target = tmp_path / "rung.db"
    target.write_bytes(b"SQLite format 3\0")
    (tmp_path / "dump").mkdir()
    (tmp_path / "dump" / "facts.json").symlink_to(target)
    write_new(tmp_path / "dump" / "facts.json", "{}")
    assert target.read_bytes() == b"SQLite format 3\0"
    assert not (tmp_path / "dump" / "facts.json").is_symlink()
    (tmp_path / "trace").symlink_to(tmp_path / "dump")
    with pytest.raises(Refused):
        safe_files.own_folder(tmp_path / "trace")


def test_a_judge_rung_keeps_copies_and_the_controller_reads_nothing_else(tmp_path):
    """bench's traces, written by the solution process, leave its scratch when the rung ends;
    the trace rung ignores any path that is not such a copy."""
    run_dir, _ = _run_dir(tmp_path)
    written = run_dir / "solution" / "bench" / "case0.trace.json"
    written.parent.mkdir()
    written.write_text(json.dumps({"traceEvents": []}))
    (run_dir / "solution" / "bench" / "case1.trace.json").symlink_to("/proc/self/environ")
    named = [str(written), str(run_dir / "solution" / "bench" / "case1.trace.json")]
    result = keep_result(run_dir, RungResult("bench", Status.OK, "timed", {}, named))
    assert result.artifacts == [str(run_dir / "artifacts" / "bench" / "case0.trace.json")]
    assert "bench: artifact case1.trace.json refused: a symbolic link" in result.message
    scratch_only = RungResult("bench", Status.OK, "", {"cases": []}, [str(written)])
    assert trace({"bench": scratch_only}, None).status == Status.SKIPPED  # type: ignore[arg-type]
    compiled = RungResult("compile", Status.OK, "", {}, [str(run_dir / "solution" / "compile" / "k.sass")])
    assert dump({"compile": compiled}, None).status == Status.SKIPPED  # type: ignore[arg-type]


def test_sources_read_no_cu_but_the_judges_copy(tmp_path):
    run_dir, compile_dir = _run_dir(tmp_path)
    (compile_dir / "k.cu").symlink_to("/proc/self/environ")
    assert Sources(run_dir, compile_dir / "k.cu").cu is None  # in the scratch folder: never read
    copies = run_dir / "artifacts" / "compile"
    copies.mkdir(parents=True)
    (copies / "k.cu").symlink_to("/proc/self/environ")  # were one ever planted there
    assert Sources(run_dir, copies / "k.cu").cu is None


def _tree(root: Path, run_dir: Path) -> dict[str, tuple[int, int]]:
    """Every file (and link) of the workspace outside the run's folder, the build cache and the
    store's own database files, with its size and modification time."""
    skip = (run_dir, root / ".rung" / "cache")
    return {
        str(p.relative_to(root)): (p.lstat().st_size, p.lstat().st_mtime_ns)
        for p in root.rglob("*")
        if not p.is_dir() and not any(s in p.parents for s in skip) and not p.name.startswith("rung.db")
    }


@pytest.mark.parametrize(
    ("solution", "compile_status", "says"),
    [
        (
            "plants_beside.py",
            Status.OK,
            ["add_kernel.sass as the build wrote it is not the SASS of its CUBIN"],
        ),
        (
            "names_badly.py",
            Status.FAILED,
            [
                "compile: artifact add_kernel.cu refused: a symbolic link",
                "compile: artifact hostname refused: outside the solution's scratch folder",
                "compile: artifact names_badly.py refused: outside the solution's scratch folder",
                "compile: artifact add_kernel.ptx refused: a symbolic link",
            ],
        ),
    ],
)
def test_a_planted_build_leaks_nothing_and_changes_no_fact(
    climb, monkeypatch, solution, compile_status, says
):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    workspace = climb.store.root.parent
    if VECTOR_ADD not in climb.described:  # described before the snapshot: that writes outside the run
        climb.described[VECTOR_ADD] = runner.describe(VECTOR_ADD, climb.store.root / "scratch")
    next_run = climb.store.run_dir(max((r.id for r in climb.store.runs()), default=0) + 1)
    before = _tree(workspace, next_run)
    with knobs.scoped(RUNG_SKIP="run,guard,correct,scale"):
        run = climb(VECTOR_ADD, PLANTED / solution)
    assert climb.store.run_dir(run.id) == next_run
    compiled = rung_of(run, "compile")
    assert compiled.status == compile_status and all(s in compiled.message for s in says), compiled.message
    copies = next_run / "artifacts" / "compile"
    names = [Path(a).name for a in compiled.artifacts]
    assert all(Path(a).parent == copies for a in compiled.artifacts) and all(safe_name(n) == n for n in names)
    assert "add_kernel.sass" in names and "add_kernel.cu" not in names
    if compile_status == Status.OK:  # the dump's facts are those of the CUBIN that was built
        (facts,) = rung_of(run, "dump").metrics["kernels"].values()
        assert facts["wgmma"] is False and facts["tma"] is False and facts["instructions"] > 20
    else:
        assert "e__2Jvil_.ptx" in names  # kept, under a name in the safe alphabet
    stored = json.dumps(climb.store.run(run.id).to_dict(), default=str)
    database = (climb.store.root / "rung.db").read_bytes().decode(errors="replace")
    for text in (stored, (next_run / "result.json").read_text(), database):
        assert SECRET not in text and "OPENAI_API_KEY" not in text
    kept = [
        p for p in next_run.rglob("*") if p.is_file() and not p.is_symlink() and "solution" not in p.parts
    ]
    assert not any(SECRET.encode() in p.read_bytes() for p in kept)
    assert _tree(workspace, next_run) == before  # nothing written outside the run's folder
    assert climb.store.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_a_workers_run_folder_comes_back_without_the_scratch_folder(tmp_path):
    """An executor's worker packs its run folder for the controller: a planted absolute link in the
    scratch folder once made the controller's unpacking raise; what left it is in artifacts/."""
    run_dir, compile_dir = _run_dir(tmp_path)
    (compile_dir / "k.cu").symlink_to("/proc/self/environ")
    write_new(copies_folder(run_dir, "compile") / "k.sass", "SASS")
    out = unpack_folder(pack_folder(run_dir, leave_out=("solution",)), tmp_path / "back")
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*")) == [
        "artifacts",
        "artifacts/compile",
        "artifacts/compile/k.sass",
    ]
