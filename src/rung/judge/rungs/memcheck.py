"""memcheck, the judge's part: the solution's kernels under compute-sanitizer on the smallest test cases.

Asked for only (`RUNG_MEMCHECK=1`): memcheck runs kernels 10 to 100 times slower. Without a GPU
the ladder leaves it SKIPPED (`needs_gpu`); without compute-sanitizer it is SKIPPED saying so. On
the CPU a read past an input meets the poisoned band after it (NaN); on a GPU the caching
allocator packs tensors side by side, so such a read lands in another tensor, and only a
sanitizer sees it.

The judge draws the MAX_CASES smallest test cases' inputs, saves them in the candidate's scratch
folder, and runs `compute-sanitizer --tool memcheck` on `rung.solution.memcheck_target`, a
solution process confined like the others that calls the solution once on each. Torch's caching
allocator is off there (PYTORCH_NO_CUDA_MEMORY_CACHING=1), so every tensor is an allocation of
its own, and the tool pads each with PADDING_BYTES: a read past an input is past its allocation,
never inside the next tensor, and the tool reports it. The tool writes its report (`--log-file`)
into the run's `memcheck/` folder, made here, which the solution process cannot write; what that
process prints goes to another file there. The judge reads the report without following links,
at most MAX_REPORT_BYTES, and decides: FAILED naming the first access the tool reports, OK when
it reports none and every call returned, ERROR when the tool wrote no summary or a call failed
only under it (a solution that makes the check fall over does not pass it).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from rung import knobs
from rung.common.child import python_command
from rung.common.safe_files import Refused, open_new, own_folder, read_beneath, write_new
from rung.common.trees import leaves
from rung.judge.ncu_summary import read_text
from rung.judge.rungs.correct import trial_seed
from rung.judge.sanitizer_report import clean, parse
from rung.judge.tool_run import run_logged
from rung.spec import RungResult, Status

if TYPE_CHECKING:
    from rung.judge.session import Session

MAX_CASES = 3
MAX_REPORT_BYTES = 4 * 2**20  # twenty records with host backtraces are well under 1 MiB
PADDING_BYTES = 4096
PRINT_LIMIT = 20  # records the tool prints; the summary counts them all
SEED_BASE = 3000  # the cases' inputs: trial seeds of their own, never another rung's


def find() -> str | None:
    """The compute-sanitizer executable: on PATH, else where the CUDA toolkit puts it."""
    name = "compute-sanitizer"
    return shutil.which(name) or shutil.which(name, path="/usr/local/cuda/bin")


def command(exe: str, log: Path, target: list[str]) -> list[str]:
    """memcheck on `target`, its report to `log` (a `%` there would be the tool's own pattern)."""
    return [
        exe,
        "--tool",
        "memcheck",
        "--print-limit",
        str(PRINT_LIMIT),
        "--padding",  # a read past one allocation lands in padding, never in the next tensor
        str(PADDING_BYTES),
        "--log-file",
        str(log).replace("%", "%%"),
        *target,
    ]


def memcheck(session: Session, params: dict[str, Any]) -> RungResult:
    if not knobs.get("RUNG_MEMCHECK"):
        return RungResult("memcheck", Status.SKIPPED, "not asked for (RUNG_MEMCHECK=1, or rung --memcheck 1)")
    exe = find()
    if exe is None:
        why = "compute-sanitizer is not installed here (PATH, /usr/local/cuda/bin)"
        return RungResult("memcheck", Status.SKIPPED, why)
    out = session.run_dir / "memcheck"
    try:
        own_folder(out)
    except Refused as e:
        return RungResult("memcheck", Status.ERROR, f"the run's memcheck/ folder refused: {e.reason}")
    start, env = session.profile_start()
    env["PYTORCH_NO_CUDA_MEMORY_CACHING"] = "1"  # every tensor an allocation the tool knows the end of
    cases = smallest(session)
    inputs_path = Path(start.scratch) / "memcheck_inputs.pt"
    with open_new(inputs_path) as f:  # a link planted there is removed, not followed
        torch.save([session.inputs(c, trial_seed(session.seed, SEED_BASE + i, 0)) for i, c in cases], f)
    start_path = write_new(out / "start.json", json.dumps(start.to_dict()))
    log, target_log = out / "memcheck.log", out / "target.log"
    target = python_command("rung.solution.memcheck_target", str(start_path), str(inputs_path))
    began = time.perf_counter()
    code = run_logged(command(exe, log, target), env, out, target_log, session.timeout_s)
    inputs_path.unlink(missing_ok=True)
    seconds = round(time.perf_counter() - began, 3)
    if code is None:
        why = f"compute-sanitizer still running after {session.timeout_s:g} s; killed"
        return RungResult("memcheck", Status.TIMEOUT, why, seconds=session.timeout_s)
    checked = [c for _, c in cases]
    return judged(out, log, code, checked, read_text(target_log), seconds)


def judged(
    out: Path, log: Path, code: int, cases: list[dict[str, Any]], said: str, seconds: float
) -> RungResult:
    """The verdict on the tool's report at `log` beneath `out` (the judge's folder), the exit code
    of the tool (the target's where it found nothing), and what the target printed (`said`)."""
    artifacts = [str(p) for p in (log, out / "target.log") if p.is_file() and not p.is_symlink()]
    figures: dict[str, Any] = {"cases": cases, "exit_code": code}
    try:
        report = parse(read_beneath(out, log, MAX_REPORT_BYTES).decode(errors="replace"))
    except (Refused, OSError) as e:
        why = e.reason if isinstance(e, Refused) else os.strerror(e.errno or 0)
        return RungResult(
            "memcheck", Status.ERROR, f"compute-sanitizer's report refused: {why}", figures, [], seconds
        )
    figures.update(report.figures())
    last = clean(_last_line(said))
    if report.errors is None:
        errors = [n for n in report.tool_notes if not n.startswith("Warning:")]
        because = (errors or report.tool_notes or [last])[0]
        why = f"compute-sanitizer ended without its error summary (exit code {code}): {because}"
        return RungResult("memcheck", Status.ERROR, why, figures, artifacts, seconds)
    shown = ", ".join(clean(str(c), 60) for c in cases)
    if report.errors:
        first = report.accesses[0].line() if report.accesses else "(no record printed)"
        head = f"{report.errors} memory error(s) under compute-sanitizer memcheck over {shown}; the first:"
        return RungResult("memcheck", Status.FAILED, f"{head}\n  {first}", figures, artifacts, seconds)
    if code != 0:
        why = f"the solution's calls failed under compute-sanitizer (exit code {code}): {last}"
        return RungResult("memcheck", Status.ERROR, why, figures, artifacts, seconds)
    plural = "s" if len(cases) != 1 else ""
    ok = f"no memory errors under compute-sanitizer memcheck: one call on each of {len(cases)} case{plural} ({shown})"
    return RungResult("memcheck", Status.OK, ok, figures, artifacts, seconds)


def smallest(session: Session) -> list[tuple[int, dict[str, Any]]]:
    """The MAX_CASES smallest test cases by the bytes of their inputs, each with its index."""
    sizes = []
    for i, case in enumerate(session.problem.tests):
        drawn = session.inputs(case, trial_seed(session.seed, SEED_BASE + i, 0))
        sizes.append((sum(t.numel() * t.element_size() for t in leaves(drawn)), i, case))
        del drawn
    return [(i, case) for _, i, case in sorted(sizes, key=lambda s: (s[0], s[1]))[:MAX_CASES]]


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else ""
