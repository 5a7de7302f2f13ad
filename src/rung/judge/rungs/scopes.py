"""scopes, the judge's part: proton's intra-kernel trace of one call, in a process of its own.

Asked for only (`RUNG_SCOPES=1`): instrumented kernels are rebuilt and run slower, and the
figures serve a person or an agent looking for where the cycles go, never a verdict. The judge
saves the last benchmark case's inputs and runs `rung.solution.scopes_target`, a solution process
confined like any other, which writes proton's Chrome trace into its scratch folder. That file is
the solution process's word: the judge opens it without following links, reads at most
MAX_TRACE_BYTES, summarizes it (`rung.common.proton_scopes`) and writes the summary and a copy of the trace to
the run's `scopes/` folder, where the solution cannot write. Solutions without Triton kernels are
SKIPPED: proton instruments Triton's. So is a call that fails only when traced (the rungs that
decide ran it on such inputs already): the reason is proton's or rung's marks, and a rung that
decides nothing must not fail a run.
"""

from __future__ import annotations

import contextlib
import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from rung import backends, knobs
from rung.common.child import python_command
from rung.common.proton_scopes import lines, summarize
from rung.common.safe_files import Refused, open_new, own_folder, read_beneath, write_new
from rung.judge.ncu_summary import read_text
from rung.judge.rungs.correct import trial_seed
from rung.judge.tool_run import run_logged
from rung.spec import RungResult, Status

if TYPE_CHECKING:
    from rung.judge.session import Session

MAX_TRACE_BYTES = 256 * 2**20
TAIL_LINES = 6


def scopes(session: Session, params: dict[str, Any]) -> RungResult:
    if not knobs.get("RUNG_SCOPES"):
        return RungResult("scopes", Status.SKIPPED, "not asked for (RUNG_SCOPES=1, or rung --scopes 1)")
    found = backends.detect_all(session.source.read_text()) if session.source else []
    if not any(b.BACKEND.value == "triton" for b in found):
        kinds = ", ".join(b.BACKEND.value for b in found) or "no kernel language"
        return RungResult(
            "scopes", Status.SKIPPED, f"proton traces Triton kernels only; this solution uses {kinds}"
        )
    start, env = session.profile_start()
    try:  # the trace's folder, made here: one the solution planted (a link) is refused
        scratch = own_folder(Path(start.scratch) / "scopes")
    except Refused as e:
        why = f"the scratch folder's scopes/ refused: {e.reason}"
        return RungResult("scopes", Status.SKIPPED, why)
    out = session.run_dir / "scopes"
    out.mkdir(parents=True, exist_ok=True)
    index = len(session.problem.benchmarks) - 1
    case = session.problem.benchmarks[index]
    inputs_path = Path(start.scratch) / "scopes_inputs.pt"
    with open_new(inputs_path) as f:  # a link planted there is removed, not followed
        torch.save(session.inputs(case, trial_seed(session.seed, 2000 + index, 0)), f)
    start_path = out / "start.json"
    start_path.write_text(json.dumps(start.to_dict()))
    log = out / "target.log"
    target = python_command("rung.solution.scopes_target", str(start_path), str(inputs_path), str(scratch))
    began = time.perf_counter()
    code = run_logged(target, env, out, log, session.timeout_s)  # cwd: a folder the solution cannot write
    inputs_path.unlink(missing_ok=True)
    seconds = round(time.perf_counter() - began, 3)
    if code is None:
        why = f"the traced call was still running after {session.timeout_s:g} s; killed"
        return RungResult("scopes", Status.TIMEOUT, why, seconds=session.timeout_s)
    said = [ln.strip() for ln in read_text(log).strip().splitlines() if ln.strip()][-TAIL_LINES:]
    if code != 0:  # after scale passed on such inputs: proton's or the marks' trouble, and it decides nothing
        why = f"proton could not trace the call (exit code {code}): {said[-1] if said else ''}"
        return RungResult("scopes", Status.SKIPPED, why, {"said": said}, [str(log)], seconds)
    written = sorted(p for p in scratch.glob("scopes.*") if p.suffix != ".json")  # proton names the format
    raw = _read_untrusted(Path(start.scratch), written[0]) if written else None
    if raw is None:
        why = f"proton wrote no readable trace (at most {MAX_TRACE_BYTES >> 20} MiB): {said[-1] if said else ''}"
        return RungResult("scopes", Status.SKIPPED, why, {"said": said}, [str(log)], seconds)
    try:
        events = json.loads(raw).get("traceEvents", [])
        kernels = summarize(events)
    except (ValueError, TypeError, AttributeError, KeyError) as e:
        return RungResult(
            "scopes", Status.SKIPPED, f"proton's trace is unreadable: {e}", {}, [str(log)], seconds
        )
    trace, summary = out / "trace.chrome_trace.json", out / "summary.json"
    write_new(trace, raw)
    marks = _read_untrusted(Path(start.scratch), scratch / "marks.json", 2**20)
    figures: dict[str, Any] = {"case": case, "kernels": kernels}
    with contextlib.suppress(ValueError, TypeError):
        figures["marked"] = json.loads(marks or b"{}")
    write_new(summary, json.dumps(figures, indent=1, default=str))
    if not kernels:
        why = "proton traced no scope (no Triton kernel ran, or none could be marked)"
        return RungResult("scopes", Status.SKIPPED, why, figures, [str(trace), str(summary)], seconds)
    head = f"cycles per scope per warp in one call of {case} (proton; open {trace.name} in Perfetto)"
    return RungResult(
        "scopes",
        Status.OK,
        "\n".join([head, *lines(kernels)]),
        figures,
        [str(trace), str(summary), str(log)],
        seconds,
    )


def _read_untrusted(scratch: Path, path: Path, limit: int = MAX_TRACE_BYTES) -> bytes | None:
    """A regular file the solution process wrote beneath `scratch`, no link followed on the way,
    or None; at most `limit` bytes."""
    try:
        return read_beneath(scratch, path, limit)
    except (Refused, OSError):
        return None
