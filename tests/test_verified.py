"""ok means verified: a version whose correctness rungs did not run (a CUDA C++ kernel on a
machine with no GPU) reads unverified in every place a script, an agent or a person reads it,
and is never the best version; a check of it alone still exits 0, as pytest counts a skip. A
check of several ends with a recap of what is not verified; -q hides SKIPPED rungs, -x stops
at the first failed version."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, SPLIT

TINY = FIXTURES / "tiny"
CUDA_WRONG = FIXTURES / "unverified" / "cuda_wrong.py"  # never writes its last element
RAISES = TINY / "solutions" / "raises.py"
WRONG_SHAPE = TINY / "solutions" / "wrong_shape.py"

pytestmark = pytest.mark.skipif(
    bool(os.environ.get("CUDA_VISIBLE_DEVICES")) or Path("/dev/nvidiactl").exists(),
    reason="reads what a machine with no GPU says",
)


def rung(*args: str, ws: Path) -> subprocess.CompletedProcess[str]:
    # compile left out: nvcc's build takes half a minute here and decides nothing of correctness
    env = {**os.environ, "RUNG_SKIP": "compile"}
    return subprocess.run(
        [sys.executable, "-m", "rung", *args, "-w", str(ws)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """The unverified CUDA version checked with two failing ones (-q -x: runs 1 and 2, the
    last never climbed); the workspace and the check's lines."""
    ws = tmp_path_factory.mktemp("verified")
    done = rung("check", str(TINY), str(CUDA_WRONG), str(RAISES), str(WRONG_SHAPE), "-q", "-x", ws=ws)
    assert done.returncode == 1, done.stderr
    return ws, done.stdout.splitlines()


def test_json_says_unverified_and_why_and_the_report_never_counts_or_picks_it(workspace):
    ws = workspace[0]
    shown = json.loads(rung("show", "1", "--json", ws=ws).stdout)
    assert (shown["ok"], shown["outcome"], shown["verdict"]) == (False, "unverified", "SKIPPED at run")
    hist = json.loads(rung("history", str(TINY), "--json", ws=ws).stdout)
    assert [(r["run"], r["ok"], r["outcome"], r["why"]) for r in hist["runs"]] == [
        (1, False, "unverified", "needs a GPU: cuda solutions run only on CUDA devices"),
        (2, False, "failed", "ValueError: kernel exploded on purpose (at raises.py:2 in custom_kernel)"),
    ]
    report = rung("report", str(TINY), ws=ws)
    assert report.stdout.endswith("2 versions of tiny, 0 verified, 1 failed, 1 not verified here\n")
    doc = json.loads(rung("report", str(TINY), "--json", ws=ws).stdout)
    assert doc["best_run"] is None  # a version that was never compared with the reference is no best
    assert "0 verified" in Path(doc["out"]).read_text()


def test_the_human_verdict_says_what_was_not_verified(workspace):
    text = rung("show", "1", ws=workspace[0]).stdout
    assert "  verdict: SKIPPED at run" in text
    assert "  not verified here: needs a GPU: cuda solutions run only on CUDA devices" in text


def test_a_check_of_several_ends_with_a_recap_quiet_hides_skips_and_x_stops(workspace):
    lines = workspace[1]
    assert not any(line.startswith("  - ") for line in lines)  # -q: no SKIPPED rung line
    assert not any(str(WRONG_SHAPE) in line for line in lines[:-4])  # -x: never climbed
    assert lines[-5:-1] == [
        "== not verified ==",
        f"  SKIPPED at run  {CUDA_WRONG}  (run 1): needs a GPU: cuda solutions run only on CUDA devices",
        f"  FAIL at run  {RAISES}  (run 2): ValueError: kernel exploded on purpose (at raises.py:2 in custom_kernel)",
        "stopped at the first failed version (-x): 1 not checked",
    ]
    assert re.fullmatch(rf"== 0 passed, 0 failed, 1 error, 1 skipped in {SPLIT} ==", lines[-1])


def test_the_optimize_loop_keeps_an_unverifiable_start_only_until_a_verified_version_comes(tmp_path):
    """Not repaired (it is not wrong); a failing candidate never replaces it; a verified one does."""
    done = rung(
        "optimize",
        str(TINY),
        "--agent",
        "replay",
        "--from",
        str(CUDA_WRONG),
        "--replay",
        str(RAISES),
        "--replay",
        str(TINY / "solutions" / "good.py"),
        "--json",
        ws=tmp_path,
    )
    doc = json.loads(done.stdout)
    assert [c["outcome"] for c in doc["candidates"]] == ["failed", "verified"]
    good = hashlib.sha256((TINY / "solutions" / "good.py").read_bytes()).hexdigest()
    assert doc["best"]["sha256"] == good and doc["best"]["ok"] is True
    assert done.returncode == 0 and doc["reason"] == "the agent has nothing more to propose"
