"""profile, the judge's part: Nsight Compute on one call of the solution, in a process of its own.

The judge draws the last benchmark case's inputs, saves them in the candidate's scratch folder,
and runs `ncu --clock-control none --set full` on `rung.solution.profile_target`: a solution
process (same confinement, same allow-listed environment) that loads those inputs, calls the
solution twice outside the profiled NVTX range and once inside it, with nothing of rung's in the
range (no poisoning, no copies: the entry point and a synchronize), and nothing of the reference
in the process. ncu writes the report where that process cannot write; the judge then reads it
with ncu's own `ncu_report` module (`rung.judge.ncu_export`, a process of its own) and the
cost model's bytes for the case give the excess traffic. The profiled call's outputs come back
as bytes the judge compares with the reference itself (`rung.judge.profiled_call`): a wrong
answer there FAILS the rung before any of ncu's figures is read, for they would describe other
work than the solution's.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from rung.common import ncu
from rung.common.child import python_command
from rung.common.safe_files import open_new
from rung.judge import gpu_lock, own_kernels, profiled_call, witness
from rung.judge.clocks import cuda_uuid
from rung.judge.ncu_export import NO_MODULE
from rung.judge.ncu_summary import failed, interpret, read_text, replay_passes
from rung.judge.rungs.correct import trial_seed
from rung.judge.tool_run import run_logged
from rung.spec import RungResult, Status

if TYPE_CHECKING:
    from rung.judge.session import Session

EXPORT_TIMEOUT_S = 300.0


def profile(session: Session, params: dict[str, Any]) -> RungResult:
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
    scratch = Path(start.scratch)
    inputs_path, outputs_path = scratch / "profile_inputs.pt", scratch / profiled_call.OUTPUTS
    inputs = session.inputs(case, trial_seed(session.seed, 1000 + index, 0))
    with open_new(inputs_path) as f:  # in the scratch folder: a link planted there is removed, not followed
        torch.save(inputs, f)
    outputs_path.unlink(missing_ok=True)  # only the target's own, written after its call
    start_path = out / "start.json"
    start_path.write_text(json.dumps(start.to_dict()))
    report, log, target_log = out / "report.ncu-rep", out / "ncu.log", out / "target.log"
    target = python_command(
        "rung.solution.profile_target", str(start_path), str(inputs_path), str(outputs_path)
    )
    began = time.perf_counter()
    # one check at a time profiles this GPU: two at once, one read SKIPPED (rung.judge.gpu_lock)
    gpu = cuda_uuid() if session.device == "cuda" else session.device  # a stand-in ncu on the CPU
    with gpu_lock.held(gpu, session.timeout_s):
        # cwd: not the scratch folder, a folder the solution cannot write
        code = run_logged(ncu.command(exe, report, log, target), env, out, target_log, session.timeout_s)
    inputs_path.unlink(missing_ok=True)
    seconds = round(time.perf_counter() - began, 3)
    if code is None:
        why = f"ncu still running after {session.timeout_s:g} s; killed"
        return RungResult("profile", Status.TIMEOUT, why, seconds=session.timeout_s)
    artifacts = [str(p) for p in (report, log, target_log) if p.exists()]
    if not report.exists():
        return failed(read_text(log), read_text(target_log), code, artifacts, seconds)
    wrong = profiled_call.wrong_answer(session, inputs, scratch)
    if wrong:
        why = (
            f"wrong answer in the call Nsight Compute profiled (case {case}): {wrong}; ncu's figures "
            "would be of other work than the solution does where it is checked"
        )
        return RungResult("profile", Status.FAILED, why, {"profiled_call": "wrong"}, artifacts, seconds)
    reading = time.perf_counter()
    exported, why = export(report, out / "report.json", exe)
    if exported is None:
        return RungResult("profile", Status.SKIPPED, why, {}, artifacts, seconds)
    spent = {
        "ncu_s": seconds,
        "read_s": round(time.perf_counter() - reading, 3),
        "replay_passes": replay_passes(read_text(log)),
    }
    cost = session.problem.cost(case) or {}
    artifacts.append(str(out / "report.json"))
    result = interpret(exported, case, cost.get("bytes"), artifacts, seconds, spent)
    result.metrics["profiled_call"] = "right"  # its outputs, compared by the judge, match
    result.metrics["own_kernel"], launched = _own_kernel(session, exported.get("kernels", []))
    if launched:
        why = (
            f"kernel_launched, as Nsight Compute saw the call from outside the solution's process: {launched}"
        )
        return RungResult("profile", Status.FAILED, why, result.metrics, artifacts, seconds)
    # bench's figure for this case, witnessed by ncu's own measurement (FAILED where contradicted)
    return witness.judged(result, session.bench_medians.get(index), case)


def _own_kernel(session: Session, kernels: list[dict[str, Any]]) -> tuple[str, str]:
    """Guard's kernel_launched asked again, of the kernels ncu saw (a list the solution's process
    cannot write): ("seen", ""), ("missing", why), or not asked and why not (no kernel language;
    an ncu_report without full names, which would let a Python name spell a library kernel's
    short one)."""
    languages = own_kernels.languages(session)
    names = [str(k.get("demangled") or "") for k in kernels]
    if not languages:
        return "not asked: no kernel language", ""
    if not all(names):
        return "not asked: this ncu_report gives no full kernel names", ""
    missing = own_kernels.not_launched(names, languages, own_kernels.known(session, languages))
    return ("missing", missing) if missing else ("seen", "")


def export(report: Path, out: Path, exe: str) -> tuple[dict[str, Any] | None, str]:
    """The report as JSON through ncu's own module, or None and why not (the report is kept)."""
    dirs = [str(d) for d in ncu.python_module_dirs(exe)]
    cmd = python_command("rung.judge.ncu_export", str(report), str(out), *dirs)
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=EXPORT_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return None, f"reading the report with ncu_report took over {EXPORT_TIMEOUT_S:g} s; kept at {report}"
    if done.returncode == NO_MODULE:
        return None, (
            f"Nsight Compute's Python module (ncu_report, in extras/python of its install) is not "
            f"here; the report is kept for ncu-ui: {report}"
        )
    if done.returncode != 0 or not out.exists():
        last = (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]
        return None, f"ncu_report could not read the report ({last}); kept at {report}"
    return json.loads(out.read_text()), ""
