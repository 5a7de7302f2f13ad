"""ok means verified: a version whose correctness rungs did not run (a CUDA C++ kernel on a
machine with no GPU) reads unverified in every place a script, an agent or a person reads it,
and is never the best version; a check of it alone still exits 0, as pytest counts a skip."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES

TINY = FIXTURES / "tiny"
GOOD = TINY / "solutions" / "good.py"
CUDA_WRONG = FIXTURES / "unverified" / "cuda_wrong.py"  # never writes its last element

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
def workspace(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """The unverified CUDA version checked alone (run 1), then beside a verified one (runs 2, 3)."""
    ws = tmp_path_factory.mktemp("verified")
    alone = rung("check", str(TINY), str(CUDA_WRONG), "--json", ws=ws)
    rung("check", str(TINY), str(GOOD), str(CUDA_WRONG), ws=ws)
    return ws, alone


def test_check_json_says_unverified_and_why_and_exits_zero(workspace):
    _, alone = workspace
    assert alone.returncode == 0, alone.stderr  # nothing failed: a skip, not a failure
    doc = json.loads(alone.stdout)
    (cuda,) = doc["solutions"]
    assert (cuda["ok"], cuda["outcome"], cuda["verdict"]) == (False, "unverified", "SKIPPED at run")
    assert cuda["why"] == "needs a GPU: cuda solutions run only on CUDA devices"
    assert doc["summary"]["passed"] == 0 and doc["summary"]["skipped"] == 1


def test_history_and_report_never_count_or_pick_it(workspace):
    ws, _ = workspace
    hist = json.loads(rung("history", str(TINY), "--json", ws=ws).stdout)
    assert [(r["run"], r["ok"], r["outcome"]) for r in hist["runs"]][:1] == [(1, False, "unverified")]
    assert [r["outcome"] for r in hist["runs"]][2] == "unverified"
    report = json.loads(rung("report", str(TINY), "--json", ws=ws).stdout)
    good = hist["runs"][1]
    assert report["best_run"] == (2 if good["ok"] else None)  # the verified one, or none
    assert [r["outcome"] for r in report["runs"]][::2] == ["unverified", "unverified"]
    page = Path(report["out"]).read_text()
    assert "not verified here" in page


def test_the_human_verdict_says_what_was_not_verified(workspace):
    ws, _ = workspace
    text = rung("show", "1", ws=ws).stdout
    assert "  verdict: SKIPPED at run" in text
    assert "  not verified here: needs a GPU: cuda solutions run only on CUDA devices" in text
