"""profile, the judge's part: Nsight Compute on one call of the solution, in a process of its own.

The judge draws the last benchmark case's inputs, saves them in the candidate's scratch folder,
and runs `ncu --clock-control none` on `rung.solution.profile_target`: a solution process (same
confinement, same allow-listed environment) that loads those inputs, calls the solution twice
outside the profiled NVTX range and once inside it. Nothing of the reference goes with them.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from typing import Any

import torch

from rung import ncu
from rung.judge.rungs.correct import trial_seed
from rung.profile import interpret
from rung.spec import RungResult, Status


def profile(session: Any, params: dict[str, Any]) -> RungResult:
    exe = ncu.find()
    if exe is None:
        return RungResult(
            "profile",
            Status.SKIPPED,
            "Nsight Compute (ncu) is not installed here (PATH, /usr/local/cuda/bin)",
        )
    out = session.run_dir / "profile"
    out.mkdir(parents=True, exist_ok=True)
    start, env = session.profile_start()
    index = len(session.problem.benchmarks) - 1
    case = session.problem.benchmarks[index]
    inputs_path = session.run_dir / "solution" / "profile_inputs.pt"
    torch.save(session.inputs(case, trial_seed(session.seed, 1000 + index, 0)), inputs_path)
    start_path = out / "start.json"
    start_path.write_text(json.dumps(start.to_dict()))
    log, target_log = out / "ncu.csv", out / "target.log"
    target = [sys.executable, "-m", "rung.solution.profile_target", str(start_path), str(inputs_path)]
    began = time.perf_counter()
    with target_log.open("wb") as sink:
        proc = subprocess.Popen(
            ncu.command(exe, log, target),
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=start.scratch,
            start_new_session=True,
        )
        try:
            code: int | None = proc.wait(session.timeout_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            code = None
    inputs_path.unlink(missing_ok=True)
    return interpret(log, target_log, code, round(time.perf_counter() - began, 3), session.timeout_s)
