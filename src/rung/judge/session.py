"""What the judge holds for one candidate: the problem, the seed, and its solution process.

The judge makes every input (from a seed the solution process never sees), runs the reference,
and asks the solution process for calls on inputs it placed there; what comes back is copied
out of the solution process's memory before anything is compared, and the inputs are read back
after every call (`observed.py`): what the judge can see for itself it does not take from the
solution process's report. Problem code runs here and only here; solution code never does.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from rung import knobs
from rung.common import confine
from rung.common.messages import CallReport, JudgeHello, SolutionStart
from rung.common.shm import TensorSpec
from rung.common.trees import clone_tree, map_tensors, tensor_list
from rung.errors import ProblemError
from rung.judge import fork_server
from rung.judge.estimate import estimated_cost
from rung.judge.formats import LoadedProblem, load_problem
from rung.judge.observed import Threads, input_changes
from rung.judge.solution_process import Placed, SolutionProcess
from rung.judge.start import solution_start, write_source


class SolutionRaised(Exception):
    """The solution raised inside a call; the rung ends ERROR with where."""


@dataclass
class Called:
    report: CallReport
    outs: list[torch.Tensor | None]  # private copies, None where an output did not fit its slot
    placed: Placed
    # The judge's own reading of the inputs after the call: each one changed, or an output's alias.
    changed: list[tuple[str, str]] = field(default_factory=list)  # (the guard's check, finding)
    # Where the format's own check decides (GPU MODE, KernelBench, not RUNG_STRICT): rung's
    # dtype and shape rules report through this as warnings instead of failing the rung.
    warn: Callable[[str, str], None] | None = None


class Session:
    def __init__(self, hello: JudgeHello, solution: SolutionProcess | None = None) -> None:
        self.hello = hello
        self.problem_path = Path(hello.problem)
        self.run_dir = Path(hello.run_dir or ".")
        self.seed = hello.seed
        self.device = "cuda" if torch.cuda.is_available() else "cpu"
        self.timeout_s = 120.0  # per request to the solution process; each rung sets its own
        self.source = Path(solution.start.source) if solution else None
        if self.source is None and hello.source is not None:
            self.source = write_source(hello)
        self._problem: LoadedProblem | None = None
        self.strict = bool(knobs.get("RUNG_STRICT"))
        self.warnings: dict[str, str] = {}  # this request's, one per kind; main.handle shows them
        # The case a rung is calling the solution on, for the message of a call that never
        # returns or takes its process down (a kernel deadlocked on its first case of two warps).
        self.at = ""
        # The solution's own output shapes and dtypes where a lenient format let them differ
        # from the reference's, by the reference's: the slots its outputs are copied into.
        self._answer_specs: dict[tuple[TensorSpec, ...], list[TensorSpec]] = {}
        self._solution = solution
        self._builder: SolutionProcess | None = None
        self.threads = Threads()  # the solution process's threads, counted in /proc
        self.backends_used: list[str] | None = None  # what the load rung found the import used
        self.built_kernels: list[dict[str, Any]] | None = None  # the compile rung's, where it built
        self.bench_medians: dict[int, float] = {}  # bench's median per case index, for profile's witness

    @property
    def problem(self) -> LoadedProblem:
        if self._problem is None:
            self._problem = load_problem(self.problem_path)
        return self._problem

    @property
    def source_file(self) -> Path:
        """The judge's copy of the solution's source: every rung runs on a session holding one
        (only a judge started to describe a problem holds none, and it climbs no rung)."""
        if self.source is None:
            raise RuntimeError("this judge holds no solution")
        return self.source

    def reuse_problem(self, other: Session) -> None:
        """The problem `other` already loaded from the same folder, rather than loading it again."""
        self._problem = other._problem

    def _process(self, proc: SolutionProcess | None, interpret: bool, logs: Path) -> SolutionProcess:
        """`proc`, or a new solution process; told the format's side before its first request."""
        assert self.source is not None
        proc = proc or SolutionProcess(*solution_start(self.hello, self.source, interpret), logs)
        if proc.side is None:
            proc.side = self.problem.solution_side(self.run_dir / "lib")
        return proc

    def profile_start(self) -> tuple[SolutionStart, dict[str, str]]:
        """The start message of a solution process run under Nsight Compute, and its environment."""
        assert self.source is not None
        start, env = solution_start(self.hello, self.source, interpret=False)
        start.side = self.problem.solution_side(self.run_dir / "lib")
        return start, env

    @property
    def solution(self) -> SolutionProcess:
        self._solution = self._process(self._solution, True, self.run_dir / "logs")
        return self._solution

    @property
    def builder(self) -> SolutionProcess:
        """Where kernels are built: on the CPU a second process with Triton compiling, not
        interpreting; on a GPU the solution process itself."""
        if self.device == "cuda":
            return self.solution
        self._builder = self._process(self._builder, False, self.run_dir / "logs" / "build")
        return self._builder

    @property
    def lenient(self) -> bool:
        """The problem's own check is the verdict on values; rung's stricter rules only warn."""
        return self.problem.owns_verdict and not self.strict

    def warn(self, kind: str, text: str) -> None:
        self.warnings.setdefault(kind, text)

    def progress(self, rung: str, done: int, total: int, case: dict[str, Any]) -> None:
        """A case (or trial) of `rung` done: a line of `progress.jsonl` in the run's folder, which
        the controller follows to report progress through a long rung (rung mcp's check)."""
        line = json.dumps({"rung": rung, "done": done, "total": total, "case": case}, default=str)
        with (self.run_dir / "progress.jsonl").open("a") as f:
            f.write(line + "\n")

    def inputs(self, case: dict[str, Any], seed: int, device: str | None = None) -> tuple[Any, ...]:
        return self._problems_own("generate_input", self.problem.inputs, case, seed, device or self.device)

    def check(self, inputs: tuple[Any, ...], value: Any, reference: Any = None) -> tuple[bool, str] | None:
        """The problem's own verdict on an output, where it has one (GPU MODE's check_implementation);
        `reference`: the reference's own output on these inputs, where the caller has it."""
        return self._problems_own("check", self.problem.check, inputs, value, reference)

    def cost(self, case: dict[str, Any]) -> dict[str, Any] | None:
        return self._problems_own("cost", self.problem.cost, case)

    def roofline_cost(self, case: dict[str, Any], inputs: tuple[Any, ...]) -> dict[str, Any] | None:
        """The problem's own cost model for `case`, else one estimated from the reference run on
        `inputs` (estimate.py), labelled so; None where no estimate can be had (the roofline is
        then SKIPPED, saying so), which is no fault of the solution's nor a reason to stop bench."""
        own = self.cost(case)
        if own:
            return own
        problem = self.problem
        try:
            return estimated_cost(problem.reference, inputs, problem.output_leaves, problem.weight_bytes())
        except Exception:
            return None

    def _problems_own(self, what: str, fn: Any, *args: Any) -> Any:
        """Problem code: whatever it raises is the problem's fault (ProblemError), never the
        solution's; but running out of GPU memory is the judge's condition (the GPU may be shared,
        or held by the solution process), raised as it is for the rung to say so."""
        try:
            return fn(*args)
        except (ProblemError, torch.OutOfMemoryError):
            raise
        except Exception as e:
            raise ProblemError(f"{self.problem.path}: its {what} raised {type(e).__name__}: {e}") from None

    def reference(self, inputs: tuple[Any, ...], precise: bool) -> Any:
        """The reference output: on float64 copies when `precise` (and allowed), else as given.
        Where the float64 copies do not fit in the GPU's memory (KernelBench's 6 GiB tensors on an
        80 GB GPU shared with the solution process), the reference as given, with a warning.
        Running out of memory otherwise is the judge's condition, not a broken problem: it is
        raised as it is, and the rung says so."""
        upcast = precise and self.problem.upcast_reference
        fits = True
        try:
            out = self.problem.reference(map_tensors(inputs, _float64) if upcast else clone_tree(inputs))
        except torch.OutOfMemoryError:
            if not upcast:
                raise
            fits = False  # the copies are let go of once this clause ends, before the retry
        except Exception as e:
            raise ProblemError(f"{self.problem.path}: the reference raised {type(e).__name__}: {e}") from None
        if not fits:
            torch.cuda.empty_cache()
            self.warn(
                "float64_reference",
                "the reference's float64 run did not fit in the GPU's free memory: outputs were compared "
                "with the reference run in its own dtype",
            )
            return self.reference(inputs, precise=False)
        self.sync()
        return out

    def expected(self, reference: Any) -> list[TensorSpec]:
        """The slots a call's outputs are copied into: the reference's shapes and dtypes, or the
        solution's own where a lenient format let them differ."""
        want = tensor_list(reference)
        if want is None:
            raise ProblemError(
                f"{self.problem.path}: the reference returned no tensor; rung compares tensors"
            )
        specs = [TensorSpec.of(t) for t in want]
        return self._answer_specs.get(tuple(specs), specs)

    def call(
        self,
        inputs: Any,
        reference: Any,
        suppress: bool = False,
        placed: Placed | None = None,
        kernel_names: bool = False,
    ) -> Called:
        """One call of the solution on `inputs` (placed anew unless `placed` is given); with
        `kernel_names`, on a GPU, its report names the kernels it ran."""
        if self.solution.pid is None or self.solution.pid != self.threads.pid:
            self.ready_to_import()  # a new process: its threads counted before it imports
        placed = placed or self.solution.place(inputs)
        report, outs = self.solution.call(
            placed, self.expected(reference), self.timeout_s, suppress, kernel_names
        )
        if report.error:
            raise SolutionRaised(report.error)
        if self._learn_answer_specs(reference, report):  # once: again, on the inputs as drawn
            self.solution.refill(placed, inputs)
            return self.call(inputs, reference, suppress, placed, kernel_names)
        changed = input_changes(inputs, placed.local, outs, self.problem.output_leaves)
        return Called(report, outs, placed, changed, self.warn if self.lenient else None)

    def ready_to_import(self) -> SolutionProcess:
        """The solution process, ready (started early, it may still be starting its libraries'
        threads until its first answer) and configured, with the solution not yet imported by it
        (the caller's next request does that), its threads counted."""
        proc = self.solution
        proc.request("before_import", {}, self.timeout_s)
        self.threads.note(proc.pid)
        return proc

    def _learn_answer_specs(self, reference: Any, report: CallReport) -> bool:
        """Where a lenient format's solution returned as many tensors as the reference but of
        other dtypes or shapes (and so was not copied out), remember its own; True if learnt."""
        key = tuple(TensorSpec.of(t) for t in tensor_list(reference) or [])
        if not self.lenient or key in self._answer_specs or len(report.outputs) != len(key):
            return False
        theirs = [TensorSpec(tuple(m.shape), m.dtype, m.device) for m in report.outputs]
        if all(m.copied for m in report.outputs) or any(
            a.device != b.device for a, b in zip(theirs, key, strict=True)
        ):
            return False
        self._answer_specs[key] = theirs
        return True

    def release(self, placed: Placed) -> None:
        self.solution.free(placed.ids, placed.local)

    def harm(self) -> dict[str, Any]:
        return self.solution.last_harm

    def sync(self) -> None:
        if self.device == "cuda":
            torch.cuda.synchronize()

    def reap(self) -> None:
        """Kill whatever the solution processes left behind: as the subreaper, the judge inherits
        every orphan they made (double-forked daemons included)."""
        keep = {p.pid for p in (self._solution, self._builder) if p is not None and p.pid is not None}
        for pid in list(keep):
            keep.update(confine.descendants(pid))
        keep |= fork_server.kept()  # the judge's own, serving its next candidates (not its children)
        confine.kill_processes([p for p in confine.descendants(os.getpid()) if p not in keep])
        confine.reap_zombies()

    def close(self) -> None:
        for proc in (self._solution, self._builder):
            if proc is not None:
                proc.close()
        # Everything below the judge, but its fork server (it dies with the judge)
        me, server = os.getpid(), fork_server.kept()
        confine.kill_processes([p for p in confine.descendants(me) if p not in server])


def _float64(t: torch.Tensor) -> torch.Tensor:
    return t.to(torch.float64) if t.is_floating_point() else t.clone()
