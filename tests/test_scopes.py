"""The scopes rung: proton's intra-kernel trace read into cycles per scope per warp group, the
phases rung marks in a kernel that marks none, and what the judge refuses to read (the real
proton runs in the gpu tests)."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest

from rung import knobs
from rung.common.loader import import_file
from rung.common.messages import JudgeHello
from rung.common.proton_scopes import lines, summarize
from rung.judge.rungs.scopes import _read_untrusted, scopes
from rung.judge.session import Session
from rung.solution.scope_marks import launched_kernels, with_phases
from rung.spec import Status
from tests.conftest import FIXTURES, PROBLEMS

PROTON = FIXTURES / "proton"
TRACE = PROTON / "matmul_trace.chrome_trace"  # captured on an H200, cut to one CTA in 32


def test_cycles_per_scope_per_warp_group_and_their_share_from_a_real_trace():
    """bench/capture_artifacts.py's matmul (main loop and epilogue marked, 8 warps), on an H200."""
    (k,) = summarize(json.loads(TRACE.read_text())["traceEvents"])
    assert k["kernel"] == "matmul" and k["ctas"] == 32 and k["warps"] == 256
    main_loop, epilogue = k["scopes"]
    assert main_loop["scope"] == "main_loop" and main_loop["share"] == pytest.approx(0.9841, abs=1e-4)
    assert epilogue["cycles_per_warp_by_group"] == {
        0: pytest.approx(1228.68, abs=0.01),
        1: pytest.approx(1111.23, abs=0.01),
    }
    assert lines([k]) == [
        "matmul: 32 CTA(s), 256 warp(s) traced; 79,931 cycles per warp from first to last mark",
        "  main_loop: 98%, 78,658 cycles per warp",
        "  epilogue: 1%, 1,170 cycles per warp; by warp group wg0 1,229, wg1 1,111",
    ]


def _normalized_cycles(node: dict, found: dict) -> dict:
    for child in node.get("children", []):
        if "normalized_cycles" in child.get("metrics", {}):
            found[child["frame"]["name"]] = child["metrics"]["normalized_cycles"]
        _normalized_cycles(child, found)
    return found


def test_the_trace_agrees_with_protons_own_tree():
    """Proton's tree (a second instrumented launch, every CTA) averages each scope's cycles over
    all warps; the fixture's one CTA in 32 gives the same within 5% (measured 0.6% and 4.5%; the
    whole trace, 0.4% and 1.2%)."""
    tree = _normalized_cycles(json.loads((PROTON / "matmul_tree.hatchet").read_text())[0], {})
    (k,) = summarize(json.loads(TRACE.read_text())["traceEvents"])
    ours = {row["scope"]: row["cycles_per_warp"] for row in k["scopes"]}
    assert set(tree) == set(ours) == {"main_loop", "epilogue"}
    for scope, cycles in tree.items():
        assert ours[scope] == pytest.approx(cycles, rel=0.05), scope


def test_events_that_are_not_a_warps_scope_are_left_out():
    assert (
        summarize([{"ph": "M", "tid": "warp 0"}, {"ph": "X", "tid": "GPU Stream 7", "dur": 1, "ts": 0}]) == []
    )


KERNEL = '''
def k(x_ptr, n, B: tl.constexpr):
    """doc"""
    pid = tl.program_id(0)
    acc = tl.zeros((B,), dtype=tl.float32)
    for i in range(0, n, B):
        acc += tl.load(x_ptr + i + tl.arange(0, B))
    s = tl.sum(acc)
    while s > 0:
        s -= 1
    tl.store(x_ptr + pid, s)
'''


def test_a_kernel_that_marks_nothing_gets_its_phases_marked_with_their_lines():
    src, named = with_phases(textwrap.dedent(KERNEL).lstrip(), first_line=10) or ("", [])
    assert named == ["prologue", "loop L14", "between L14-L17", "loop L17", "epilogue"]
    body = src.splitlines()
    assert body[1].strip() == '"""doc"""' and body[2].strip() == "_rung_proton.enter_scope('prologue')"
    assert body[-1].strip() == "_rung_proton.exit_scope('epilogue')"


def test_a_phase_with_a_return_is_left_unmarked_and_own_marks_are_kept():
    early = "def k(x, n):\n    if n == 0:\n        return\n    for i in range(n):\n        pass\n    x += 1\n"
    assert with_phases(early, 1)[1] == ["loop L4", "epilogue"]  # type: ignore[index]
    own = "def k(x):\n    pl.enter_scope('load')\n    x += 1\n    pl.exit_scope('load')\n"
    assert with_phases(own, 1) is None
    assert with_phases("def k(x):\n    return\n", 1) is None


def test_only_the_kernels_the_solution_launches_are_marked():
    path = PROBLEMS / "matmul" / "solutions" / "correct" / "tuned.py"
    module = import_file(path, "rung_scopes_tuned")
    assert [k.__name__ for k in launched_kernels(module, path.read_text())] == ["matmul_kernel"]


def _session(tmp_path, solution: str):
    """A judge's session for a vector add version on the tiny problem (its case is small)."""
    source = (PROBLEMS / "vector_add" / "solutions" / "correct" / solution).read_text()
    hello = {"problem": str(FIXTURES / "tiny"), "source": source, "solution_name": solution}
    return Session(JudgeHello(**hello, run_dir=str(tmp_path / "run"), seed=3))


def test_the_rung_runs_only_when_asked_and_only_for_triton(tmp_path):
    assert "not asked for" in scopes(_session(tmp_path, "naive.py"), {}).message
    with knobs.scoped(RUNG_SCOPES=1):
        r = scopes(_session(tmp_path, "torch_add.py"), {})
    assert (
        r.status == Status.SKIPPED
        and r.message == "proton traces Triton kernels only; this solution uses torch"
    )


def test_the_judge_never_follows_a_link_the_solution_planted(tmp_path):
    secret = tmp_path / "reference.py"
    secret.write_text("the judge's")
    (tmp_path / "scopes.chrome_trace").symlink_to(secret)
    assert _read_untrusted(tmp_path, tmp_path / "scopes.chrome_trace") is None
    (tmp_path / "scopes").symlink_to(tmp_path)  # a linked folder on the way: refused too
    assert _read_untrusted(tmp_path, tmp_path / "scopes" / "reference.py") is None
    big = tmp_path / "big"
    big.write_bytes(b"x" * 100)
    assert _read_untrusted(tmp_path, big, limit=99) is None and _read_untrusted(tmp_path, big) == b"x" * 100


def _stand_in_target(monkeypatch, plant) -> None:
    """The target replaced by `plant(scratch)`, which leaves in its scratch folder what it will."""
    from rung.judge.rungs import scopes as rung

    def run(cmd, env, cwd, log, timeout_s):
        log.write_text("")
        plant(Path(cmd[-1]))
        return 0

    monkeypatch.setattr(rung, "run_logged", run)


def test_the_judge_summarizes_the_trace_into_the_runs_folder(tmp_path, monkeypatch):
    def plant(scratch):
        shutil.copy(TRACE, scratch / "scopes.chrome_trace")
        (scratch / "marks.json").write_text('{"add_kernel": ["kernel"]}')

    _stand_in_target(monkeypatch, plant)
    with knobs.scoped(RUNG_SCOPES=1):
        r = scopes(_session(tmp_path, "naive.py"), {})
    assert r.status == Status.OK, r.message
    assert r.message.splitlines()[1].startswith("matmul: 32 CTA(s), 256 warp(s) traced")
    assert r.metrics["marked"] == {"add_kernel": ["kernel"]} and r.metrics["case"] == {"n": 4096}
    out = tmp_path / "run" / "scopes"
    assert (out / "trace.chrome_trace.json").read_bytes() == TRACE.read_bytes()
    assert json.loads((out / "summary.json").read_text())["kernels"][0]["kernel"] == "matmul"


def test_a_planted_link_instead_of_a_trace_is_not_read(tmp_path, monkeypatch):
    _stand_in_target(monkeypatch, lambda scratch: (scratch / "scopes.chrome_trace").symlink_to(TRACE))
    with knobs.scoped(RUNG_SCOPES=1):
        r = scopes(_session(tmp_path, "naive.py"), {})
    assert r.status == Status.SKIPPED and "no readable trace" in r.message


def test_a_call_that_fails_only_when_traced_is_skipped_not_an_error(tmp_path, monkeypatch):
    from rung.judge.rungs import scopes as rung

    def run(cmd, env, cwd, log, timeout_s):
        log.write_text("RuntimeError: proton pass failed\n")
        return 1

    monkeypatch.setattr(rung, "run_logged", run)
    with knobs.scoped(RUNG_SCOPES=1):
        r = scopes(_session(tmp_path, "naive.py"), {})
    assert r.status == Status.SKIPPED
    assert r.message == "proton could not trace the call (exit code 1): RuntimeError: proton pass failed"
