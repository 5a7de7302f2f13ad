"""The command line: the ladder for people, one JSON object for scripts, exit codes 0 / 1 / 2."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from importlib.metadata import version as package_version
from pathlib import Path

import pytest

from rung import knobs
from rung.spec import Status
from tests.conftest import FIXTURES, SPLIT

TINY = FIXTURES / "tiny"
SOL = TINY / "solutions"


def rung(*args: str, cwd=None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rung", *args], capture_output=True, text=True, cwd=cwd, timeout=300
    )


def test_check_json_is_one_object_with_stable_keys(tmp_path):
    done = rung(
        "check", str(TINY), str(SOL / "good.py"), str(SOL / "wrong_shape.py"), "--json", "-w", str(tmp_path)
    )
    assert done.returncode == 1, done.stderr
    doc = json.loads(done.stdout)
    assert set(doc) >= {"schema", "problem", "solutions"}
    assert doc["schema"] == "rung/3" and doc["problem"] == "tiny"
    good, bad = doc["solutions"]
    assert good["ok"] is True and bad["ok"] is False
    for s in (good, bad):
        assert set(s) >= {"path", "ok", "rungs"}
        for r in s["rungs"]:
            assert set(r) >= {"name", "status", "message", "metrics", "artifacts"}
    assert [r["name"] for r in good["rungs"]][:6] == ["load", "compile", "run", "guard", "correct", "scale"]
    assert next(r for r in bad["rungs"] if r["name"] == "run")["message"] == "shape (4,), expected (5,)"
    for s in (good, bad):  # each run's time to verdict, its parts adding up to its wall
        split, began = s["time_to_verdict"], [r["began_s"] for r in s["rungs"]]
        assert split["start_s"] == pytest.approx(began[0], abs=1e-3) and began == sorted(began)
        parts = split["start_s"] + split["rungs_s"] + split["profile_s"] + split["other_s"]
        assert parts == pytest.approx(split["wall_s"], abs=2e-3) and split["other_s"] > -0.01
    whole = doc["summary"]["time_to_verdict"]  # and the check's, outside its runs too
    assert whole["wall_s"] == doc["summary"]["wall_s"] and whole["outside_runs_s"] > 0
    assert sum(v for k, v in whole.items() if k != "wall_s") == pytest.approx(whole["wall_s"], abs=5e-3)
    assert whole["rungs_s"] == pytest.approx(
        good["time_to_verdict"]["rungs_s"] + bad["time_to_verdict"]["rungs_s"]
    )


def test_check_human_output_and_exit_zero(tmp_path):
    done = rung("check", str(TINY), str(SOL / "good.py"), "-w", str(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(str(SOL / "good.py"))
    assert any(line.split()[1:3] == ["correct", "OK"] for line in lines[1:])
    assert any(line.split()[1:3] == ["bench", "SKIPPED"] for line in lines[1:])
    assert re.fullmatch(
        r"  verdict: PASS  \(\d+ ok, \d+ skipped; \d+\.\ds: start \d+\.\d, rungs \d+\.\d, profile 0\.0,"
        r" other -?\d+\.\d\)",
        lines[-2],
    ), lines[-2]
    assert re.fullmatch(rf"== 1 passed, 0 failed, 0 errors, 0 skipped in {SPLIT} ==", lines[-1]), lines[-1]
    assert "\x1b" not in done.stdout  # piped: plain lines, no live progress drawn


def test_check_with_no_solution_named_checks_every_one_under_solutions(tmp_path):
    problem = tmp_path / "tiny"
    (problem / "solutions" / "correct").mkdir(parents=True)
    (problem / "solutions" / "wrong" / "__pycache__").mkdir(parents=True)
    shutil.copy(TINY / "problem.py", problem)
    shutil.copy(SOL / "good.py", problem / "solutions" / "correct")
    shutil.copy(SOL / "wrong_shape.py", problem / "solutions" / "wrong")
    shutil.copy(SOL / "raises.py", problem / "solutions" / "wrong")
    (problem / "solutions" / "wrong" / "_shared.py").write_text(
        "raise SystemExit('a helper, not a solution')"
    )
    (problem / "solutions" / "wrong" / "__pycache__" / "x.py").write_text("")
    done = rung("check", str(problem), "-w", str(tmp_path))
    assert done.returncode == 1  # a wrong/ solution fails, as it must
    lines = done.stdout.splitlines()
    headers = [line.split()[0] for line in lines if not line.startswith(" ") and not line.startswith("==")]
    assert headers == [
        str(problem / "solutions" / p) for p in ("correct/good.py", "wrong/raises.py", "wrong/wrong_shape.py")
    ]
    assert re.fullmatch(rf"== 1 passed, 1 failed, 1 error, 0 skipped in {SPLIT} ==", lines[-1]), lines[-1]
    doc = json.loads(rung("check", str(problem), "--json", "-w", str(tmp_path)).stdout)
    assert [s["verdict"] for s in doc["solutions"]] == ["PASS", "FAIL at run", "FAIL at run"]
    summary = doc["summary"]
    assert {k: summary[k] for k in ("passed", "failed", "errors", "skipped")} == {
        "passed": 1,
        "failed": 1,
        "errors": 1,
        "skipped": 0,
    }
    assert 0 < summary["wall_s"] < 300
    empty = rung("check", str(FIXTURES / "bad_problems" / "no_reference"), "-w", str(tmp_path))
    assert empty.returncode == 2 and "no solution named, and no .py file under" in empty.stderr
    kernelbench = rung("check", str(FIXTURES / "kernelbench" / "relu_large.py"), "-w", str(tmp_path))
    assert (
        kernelbench.returncode == 2 and "is a problem file: name the solutions to check" in kernelbench.stderr
    )


def test_workers_climb_at_once_with_the_same_verdicts_printed_in_order(tmp_path):
    done = rung(
        "--workers",
        "2",
        "check",
        str(TINY),
        str(SOL / "wrong_shape.py"),
        str(SOL / "good.py"),
        "-w",
        str(tmp_path),
    )
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    headers = [line.split()[0] for line in lines if not line.startswith((" ", "=="))]
    assert headers == [str(SOL / "wrong_shape.py"), str(SOL / "good.py")]
    verdicts = [line.split("(")[0].strip() for line in lines if line.startswith("  verdict:")]
    assert verdicts == ["verdict: FAIL at run", "verdict: PASS"]
    # climbing at once, the runs overlap (no split of the check's wall) unless one ended first
    assert re.fullmatch(rf"== 1 passed, 1 failed, 0 errors, 0 skipped in (\d+\.\ds|{SPLIT}) ==", lines[-1])
    (tmp_path / "rung.toml").write_text('executor = "smoke-signals"\n')
    bad = rung("check", str(TINY), str(SOL / "good.py"), cwd=tmp_path)
    assert bad.returncode == 2
    assert bad.stderr.startswith(
        f"rung: error: {tmp_path / 'rung.toml'}: executor = 'smoke-signals': not valid here"
    )


def test_bad_problem_exits_two_with_one_line(tmp_path):
    done = rung(
        "check", str(FIXTURES / "bad_problems" / "no_reference"), str(SOL / "good.py"), "-w", str(tmp_path)
    )
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0
    assert "defines no function reference()" in done.stderr
    assert "Traceback" not in done.stderr


def test_missing_solution_and_bad_usage_exit_two(tmp_path):
    done = rung("check", str(TINY), str(tmp_path / "nope.py"), "-w", str(tmp_path))
    assert done.returncode == 2 and "no such solution file" in done.stderr
    assert rung("check").returncode == 2
    assert rung("frobnicate").returncode == 2


def test_history_show_and_diff(tmp_path):
    rung("check", str(TINY), str(SOL / "good.py"), "-w", str(tmp_path))
    rung("check", str(TINY), str(SOL / "raises.py"), "-w", str(tmp_path))
    hist = json.loads(rung("history", str(TINY), "--json", "-w", str(tmp_path)).stdout)
    assert [r["verdict"] for r in hist["runs"]] == ["PASS", "FAIL at run"]
    table = rung("history", str(TINY), "-w", str(tmp_path)).stdout
    assert "good.py" in table and "FAIL at run" in table
    shown = json.loads(rung("show", "2", "--json", "-w", str(tmp_path)).stdout)
    assert shown["run"] == 2 and shown["verdict"] == "FAIL at run"
    assert [row["run"] for row in shown["lineage"]] == [2]  # a version with no parent
    text = rung("show", "2", "-w", str(tmp_path)).stdout
    assert "ValueError: kernel exploded on purpose" in text
    assert text.splitlines()[-1] == "  lineage: no parent version"
    missing = rung("show", "99", "-w", str(tmp_path))
    assert missing.returncode == 2 and "no run 99" in missing.stderr

    one = json.loads(rung("show", "2", "--rung", "run", "--json", "-w", str(tmp_path)).stdout)
    assert one == {"schema": "rung/3", "run": 2, "rung": shown["rungs"][2]}
    lines = rung("show", "2", "--rung", "run", "-w", str(tmp_path)).stdout.splitlines()
    assert lines[1].split()[1:3] == ["run", "ERROR"] and "kernel exploded on purpose" in lines[1]
    nope = rung("show", "2", "--rung", "nope", "-w", str(tmp_path))
    assert nope.returncode == 2 and "run 2 has no rung 'nope' (it has: load, compile, run," in nope.stderr

    doc = json.loads(rung("diff", "1", "2", "--json", "-w", str(tmp_path)).stdout)
    assert doc["a"]["verdict"] == "PASS" and doc["b"]["verdict"] == "FAIL at run"
    assert "-    return x * 2\n+    raise ValueError" in doc["source_diff"]
    assert doc["rungs"][0] == {"name": "run", "a": "OK", "b": "ERROR"}
    assert all("ratio" not in row for row in doc["bench"])  # run 2 was never timed
    text = rung("diff", "1", "2", "-w", str(tmp_path)).stdout
    assert "(PASS) → run 2" in text and "  run      OK → ERROR" in text
    same = rung("diff", "1", "1", "-w", str(tmp_path)).stdout
    assert "(same source)" in same and "every rung ended as before" in same


def test_problem_describes_its_cases(tmp_path):
    doc = json.loads(rung("problem", str(TINY), "--json", cwd=tmp_path).stdout)
    assert doc == {
        "schema": "rung/3",
        "name": "tiny",
        "path": str(TINY.resolve()),
        "doc": "Test fixture: double a float32 vector. Small enough that every rung takes milliseconds.",
        "tests": [{"n": 5}, {"n": 300}],
        "benchmarks": [{"n": 4096}],
        "tolerance": {},
        "has_cost": True,
        "own_check": "",
    }
    text = rung("problem", str(TINY), cwd=tmp_path).stdout
    assert "benchmark 0" in text and "n=4096" in text and "cost model: yes" in text


def test_problem_shows_a_kernelbench_files_sizes_and_own_check(tmp_path):
    text = rung("problem", str(FIXTURES / "kernelbench" / "matmul.py"), cwd=tmp_path).stdout
    assert "test 0      │ batch_size=32 in_features=64 out_features=48" in text
    assert "tolerance: decided by KernelBench's: the same shape, then allclose" in text
    assert "cost model: none (roofline from an estimate" in text


def test_init_prints_next_steps_that_work_when_followed(tmp_path):
    """`rung init DIR` from elsewhere: each step it prints, run as printed, works (a cd moves on)."""
    done = rung("init", "ws", cwd=tmp_path)
    steps = done.stdout.split("next (")[1].splitlines()[1:]
    assert steps == ["  cd ws", "  rung new my_op", "  rung check problems/my_op"]
    here = tmp_path
    for step in steps:
        command, *args = step.split()
        if command == "cd":
            here = here / args[0]
            continue
        followed = rung(*args, cwd=here)
        assert followed.returncode == 0, step + "\n" + followed.stdout + followed.stderr
    assert (tmp_path / "ws" / "problems" / "my_op" / "problem.py").is_file()
    assert "== 1 passed, 0 failed, 0 errors, 0 skipped" in followed.stdout
    below = rung("new", "other", cwd=tmp_path / "ws" / "context")  # inside the workspace: its problems/
    assert below.stdout.startswith(f"created {tmp_path / 'ws' / 'problems' / 'other'}: edit problem.py")


def test_init_and_new_give_a_problem_that_climbs(tmp_path):
    assert rung("init", str(tmp_path)).returncode == 0
    for name in ("AGENTS.md", "CLAUDE.md", ".mcp.json", "context/README.md", ".rung/rung.db"):
        assert (tmp_path / name).exists(), name
    servers = json.loads((tmp_path / ".mcp.json").read_text())["mcpServers"]
    assert servers["rung"] == {"command": sys.executable, "args": ["-m", "rung", "mcp", "-w", "."]}
    assert "rung check" in (tmp_path / "AGENTS.md").read_text()
    assert rung("new", "scale_shift", cwd=tmp_path).returncode == 0
    folder = tmp_path / "problems" / "scale_shift"
    done = rung(
        "check", str(folder), str(folder / "solutions/correct/torch_first.py"), "--json", cwd=tmp_path
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["solutions"][0]["verdict"] == "PASS"
    again = rung("new", "scale_shift", cwd=tmp_path)
    assert again.returncode == 2 and "already exists" in again.stderr
    assert rung("new", "Bad-Name", cwd=tmp_path).returncode == 2


def test_init_registers_the_console_script_that_ran_it_by_absolute_path(tmp_path):
    script = Path(sys.executable).parent / "rung"  # the venv's console script, not one on PATH
    done = subprocess.run(
        [str(script), "init", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    server = json.loads((tmp_path / ".mcp.json").read_text())["mcpServers"]["rung"]
    assert server == {"command": str(script.resolve()), "args": ["mcp", "-w", "."]}


def test_rung_skip_leaves_rungs_out_saying_so(tmp_path, climb):
    with knobs.scoped(RUNG_SKIP="compile, profile"):
        run = climb(TINY, SOL / "good.py")
    status = {r.name: (r.status, r.message) for r in run.rungs}
    assert status["compile"] == (Status.SKIPPED, "left out (RUNG_SKIP)")
    assert status["dump"] == (Status.SKIPPED, "needs compile, which is SKIPPED")
    assert status["correct"][0] == Status.OK and run.ok
    done = subprocess.run(
        [sys.executable, "-m", "rung", "check", str(TINY), str(SOL / "good.py"), "-w", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "RUNG_SKIP": "profiel"},
    )
    assert done.returncode == 2
    assert done.stderr.startswith("rung: error: environment RUNG_SKIP: skip = 'profiel': not valid here")
    assert not (tmp_path / ".rung").exists()  # refused before anything ran or was stored


def test_read_only_commands_in_an_empty_folder_create_nothing_and_say_where_they_looked(tmp_path):
    for args in (["history", "tiny"], ["show", "1"], ["diff", "1", "2"], ["history", "tiny", "--json"]):
        done = rung(*args, cwd=tmp_path)
        assert done.returncode == 2, args
        assert done.stderr == (
            f"rung: error: no rung workspace: no .rung/ in {tmp_path} or any folder above it"
            " (rung check or rung init makes one; --workspace or RUNG_WORKSPACE names one)\n"
        )
    named = rung("history", "tiny", "-w", str(tmp_path / "elsewhere"), cwd=tmp_path)
    assert named.returncode == 2 and f"{tmp_path / 'elsewhere'} holds no .rung/" in named.stderr
    assert json.loads(rung("problem", str(TINY), "--json", cwd=tmp_path).stdout)["name"] == "tiny"
    assert list(tmp_path.iterdir()) == []


def test_read_only_commands_find_the_workspace_upwards(tmp_path):
    rung("check", str(TINY), str(SOL / "good.py"), cwd=tmp_path)
    (tmp_path / "deeper").mkdir()
    doc = json.loads(rung("history", str(TINY), "--json", cwd=tmp_path / "deeper").stdout)
    assert [r["verdict"] for r in doc["runs"]] == ["PASS"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [".rung", "deeper"]


def test_device_says_what_this_kernel_offers_to_confine_solutions(tmp_path):
    done = rung("device", "--json", cwd=tmp_path)
    assert list(tmp_path.iterdir()) == []  # asking about the machine makes no workspace
    assert done.returncode == 0, done.stderr
    offered = json.loads(done.stdout)["confinement"]
    assert set(offered) >= {"landlock_abi", "filesystem", "ptrace", "signals", "subreaper"}
    assert all(v == "yes" or v.startswith("no: ") for k, v in offered.items() if k != "landlock_abi")


def test_shell_completion_completes_commands_and_setting_flags(tmp_path):
    script = str(Path(sys.executable).parent / "rung")
    shown = subprocess.run([script, "--show-completion", "bash"], capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0 and "_RUNG_COMPLETE=complete_bash" in shown.stdout

    def complete(words: str) -> list[str]:
        env = {**os.environ, "_RUNG_COMPLETE": "complete_bash", "COMP_WORDS": words, "COMP_CWORD": "1"}
        done = subprocess.run([script], capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path)
        return done.stdout.split()

    assert complete("rung ca") == ["cache"]
    assert complete("rung --tri") == ["--trials"]


def test_settings_are_taken_after_the_command_too_and_listed_in_its_help(tmp_path):
    shown = json.loads(rung("--skip", "bench", "config", "--skip", "profile", "--json", cwd=tmp_path).stdout)
    skip = next(s for s in shown["settings"] if s["name"] == "skip")
    assert (skip["value"], skip["source"]) == ("profile", "flag --skip")  # the later one outranks
    bad = rung("check", str(TINY), str(SOL / "good.py"), "--skip", "profiel", "-w", str(tmp_path))
    assert bad.returncode == 2 and bad.stderr.startswith("rung: error: flag --skip: skip = 'profiel'")
    assert not (tmp_path / ".rung").exists()  # refused before anything ran
    helped = rung("check", "--help", cwd=tmp_path).stdout
    assert "--skip" in helped and "[RUNG_SKIP]" in helped and "--strict" in helped


def test_ctrl_c_says_what_it_stopped_and_where_the_record_is(tmp_path):
    hang = SOL / "hang.py"
    args = [sys.executable, "-m", "rung", "check", str(TINY), str(hang), "-w", str(tmp_path)]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.split()[:1] == ["-"] and "compile" in line:  # the run rung, which hangs, has begun
            break
    time.sleep(1)  # into the run rung's call
    proc.send_signal(signal.SIGINT)
    sent = time.monotonic()
    assert proc.stderr is not None and proc.stderr.readline() == f"interrupted: stopping {hang} (run 1)\n"
    assert time.monotonic() - sent < 2
    assert (
        proc.stderr.readline() == f"interrupted: {hang} at run; stored as run 1 INTERRUPTED (rung show 1)\n"
    )
    assert time.monotonic() - sent < 2
    proc.communicate(timeout=60)
    assert proc.returncode == 130
    shown = json.loads(rung("show", "1", "--json", "-w", str(tmp_path)).stdout)
    assert (shown["verdict"], shown["outcome"]) == ("INTERRUPTED after run", "unverified")
    stopped = shown["rungs"][-1]  # the time it ran before the interrupt is kept, and the split adds up
    assert stopped["status"] == "INTERRUPTED" and stopped["seconds"] >= 1 and stopped["began_s"] > 0
    split = shown["time_to_verdict"]
    parts = split["start_s"] + split["rungs_s"] + split["profile_s"] + split["other_s"]
    assert split["rungs_s"] >= stopped["seconds"] and parts == pytest.approx(split["wall_s"], abs=2e-3)


def test_a_syntax_error_is_said_before_any_judge_starts_and_x_stops_there(tmp_path):
    started = time.monotonic()
    done = rung(
        "check", str(TINY), str(SOL / "good.py"), str(SOL / "syntax_error.py"), "-x", "-w", str(tmp_path)
    )
    assert time.monotonic() - started < 10  # no judge, no torch: about a third of a second here
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert (
        lines[0] == f"FAIL at load  {SOL / 'syntax_error.py'}: SyntaxError at syntax_error.py:1: expected ':'"
    )
    assert re.fullmatch(
        r"== stopped before any judge started \(-x\): 1 failed, 2 not climbed in \d\.\ds ==", lines[1]
    )
    assert not (tmp_path / ".rung").exists()  # nothing climbed, nothing stored


def test_small_words_a_new_user_meets(tmp_path):
    """Searching an empty index says nothing is indexed; the MCP server names its version."""
    searched = rung("context", "search", "tl.dot", "-w", str(tmp_path))
    assert (
        searched.stdout
        == "nothing indexed: rung context add PATH_OR_PACKAGE, or rung context add --builtin\n"
    )
    pytest.importorskip("mcp")
    from rung import mcp_server

    assert mcp_server.build(tmp_path).version == package_version("rung")
