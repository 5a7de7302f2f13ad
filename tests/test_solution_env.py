"""The solution process's environment is rung's to set where the user's shell would change what a
rung measures: Triton's interpreter, inductor's pool of compile workers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from rung.common.messages import JudgeHello
from rung.judge.start import solution_start


def _env(tmp_path: Path, monkeypatch, **shell: str) -> dict[str, str]:
    for name, value in shell.items():
        monkeypatch.setenv(name, value)
    source = tmp_path / "solution.py"
    source.write_text("def custom_kernel(x):\n    return x\n")
    _, env = solution_start(
        JudgeHello(problem="", run_dir=str(tmp_path / "run"), source=""), source, interpret=False
    )
    return env


def test_a_triton_interpret_left_in_the_shell_does_not_reach_the_solution_process(tmp_path, monkeypatch):
    env = _env(tmp_path, monkeypatch, TRITON_INTERPRET="1", TRITON_PRINT_AUTOTUNING="1")
    assert "TRITON_INTERPRET" not in env
    assert env["TRITON_PRINT_AUTOTUNING"] == "1"  # the rest of Triton's family stays


def test_inductor_compiles_in_the_solution_process_without_a_worker_pool(tmp_path, monkeypatch):
    env = _env(tmp_path, monkeypatch)
    done = subprocess.run(
        [sys.executable, "-c", "from torch._inductor import config; print(config.compile_threads)"],
        env={**env, "PYTHONPATH": ""},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.stdout.strip() == "1", done.stderr[-1000:]
