"""The data model of rung: the contract every other module imports, and never the reverse.

Standard library only. Everything that crosses a process boundary (judge to controller, CLI to
a script, store to disk) is JSON of these types, stamped with `SCHEMA`. Numbers carry their unit
in their name (`median_ms`, `max_abs_err`, `seconds`).
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

SCHEMA = "rung/3"


class Status(str, enum.Enum):
    """How one rung ended."""

    OK = "OK"
    FAILED = "FAILED"  # the solution is wrong, or broke a rule
    SKIPPED = "SKIPPED"  # could not run here, or a rung it needs did not pass; the message says which
    ERROR = "ERROR"  # the solution raised or crashed its process
    TIMEOUT = "TIMEOUT"  # the rung ran past its time limit
    INTERRUPTED = "INTERRUPTED"  # a person stopped it (Ctrl-C, SIGTERM): it says nothing of the solution

    @property
    def bad(self) -> bool:
        return self in (Status.FAILED, Status.ERROR, Status.TIMEOUT, Status.INTERRUPTED)


class Outcome(str, enum.Enum):
    """What a run says of its version, the three answers a script or an agent acts on."""

    VERIFIED = "verified"  # every rung that decides correctness ran and passed; nothing failed
    FAILED = "failed"  # a rung FAILED, ERRORed or TIMED OUT: the version is wrong, broke a rule or crashed
    UNVERIFIED = (
        "unverified"  # nothing failed, but a correctness rung did not run (`Run.unverified` says which)
    )


# The rungs that decide whether a version is right: each must run and pass for it to be verified.
# scale (the benchmark sizes) is excused in two cases only: the problem lists no BENCHMARKS, or
# the sizes that fit this machine all matched and the rest (`not_checked`, named in its message)
# are too large for it (a CPU). bench needs scale OK, so a timed version had every size checked.
CORRECTNESS_RUNGS = ("run", "guard", "correct", "scale")
NO_BENCHMARKS = "the problem lists no BENCHMARKS"  # scale's message (judge/rungs/correct.py)
# The rungs that run a tool over the solution (judge/tool_run.py: Nsight Compute, compute-sanitizer,
# proton): a run's time to verdict counts them apart (`TimeToVerdict.profile_s`), for they can
# cost more than the verdict rungs together (Nsight Compute does) and can be left out (RUNG_SKIP).
TOOL_RUNGS = ("memcheck", "profile", "scopes")


def _nothing_left_to_check(r: RungResult) -> bool:
    if r.name != "scale" or r.status != Status.SKIPPED:
        return False
    return r.message == NO_BENCHMARKS or bool(r.metrics.get("not_checked"))


class Backend(str, enum.Enum):
    """The kernel language a solution is written in; detected from its imports."""

    TRITON = "triton"
    CUDA = "cuda"
    CUTE = "cute"
    TILELANG = "tilelang"
    TORCH = "torch"


@dataclass
class Problem:
    """An operation to write kernels for, as the controller sees it (the judge holds the code)."""

    name: str
    path: str
    doc: str = ""
    tests: list[dict[str, Any]] = field(default_factory=list)
    benchmarks: list[dict[str, Any]] = field(default_factory=list)
    tolerance: dict[str, float] = field(default_factory=dict)
    has_cost: bool = False
    own_check: str = ""  # the format's own check that decides on values, in words; "" for rung's tolerance


@dataclass
class Solution:
    """One kernel version: a file defining `custom_kernel`, named by the hash of its content."""

    path: str
    sha256: str
    backend: str = ""
    parent: str | None = None

    @classmethod
    def from_file(cls, path: str | Path, parent: str | None = None) -> Solution:
        return cls.from_bytes(path, Path(path).read_bytes(), parent)

    @classmethod
    def from_bytes(cls, path: str | Path, data: bytes, parent: str | None = None) -> Solution:
        """The solution named by the hash of `data`: the bytes that are stored and that run."""
        return cls(path=str(path), sha256=hashlib.sha256(data).hexdigest(), parent=parent)


@dataclass
class RungResult:
    """One named step of the ladder: its status, figures (units in names), message and files."""

    name: str
    status: Status
    message: str = ""
    metrics: dict[str, Any] = field(default_factory=dict)
    artifacts: list[str] = field(default_factory=list)
    seconds: float = 0.0
    # When it began, in seconds after its run's start (both read on the machine that climbed it);
    # None where that was not recorded (a rung stored before rung recorded it, a lost worker's).
    began_s: float | None = None

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["status"] = self.status.value
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RungResult:
        return cls(
            name=d["name"],
            status=Status(d["status"]),
            message=d.get("message", ""),
            metrics=dict(d.get("metrics", {})),
            artifacts=list(d.get("artifacts", [])),
            seconds=float(d.get("seconds", 0.0)),
            began_s=None if d.get("began_s") is None else float(d["began_s"]),
        )


@dataclass
class Device:
    """Where a run happened: a GPU and its measured ceilings, or the CPU."""

    kind: str  # "cuda" or "cpu"
    name: str
    arch: str = ""  # sm_90 for a CUDA device
    memory_bytes: int = 0
    driver: str = ""
    ceilings: dict[str, float] = field(default_factory=dict)
    # What NVML said when the run started (clocks, clock reasons, power, ECC, UUID), or
    # {"available": False, "reason": ...}; empty in runs stored before it was read.
    nvml: dict[str, Any] = field(default_factory=dict)


class BenchCase(TypedDict, total=False):
    """One case the bench rung timed, as stored in its metrics' `cases` and printed by --json
    (docs/schema). The solution process's timing figures (common/stats.py's summary, the CUPTI
    pass of common/measure.py) with what the judge adds; the keys rung reads are typed here, and
    a stored case may carry more of the solution process's figures beside them."""

    case: dict[str, Any]
    input_sets: int
    # the solution process's timing (summary(): all in ms but samples and the rel_ ratios)
    median_ms: float
    mean_ms: float
    min_ms: float
    p20_ms: float
    p80_ms: float
    std_ms: float
    sem_ms: float
    rel_sem: float
    median_sem_ms: float
    rel_median_sem: float
    samples: int
    timing: str  # "events"
    per_set_median_ms: list[float]
    graph: dict[str, Any]  # the CUDA-graph pass's summary, where outputs were small enough
    # its CUPTI pass: each call's span, and the kernels in it
    cupti: dict[str, Any]
    cupti_error: str
    busy_ms: float
    gap_ms: float
    kernels_per_call: int
    copies_per_call: int
    kernels: list[str]
    l2_flush_bytes: int
    profiler_warmup: dict[str, Any]
    # the judge's
    clocks: list[dict[str, Any]]
    method: str
    timed_outputs_checked: int
    throttled: bool
    shared_gpu: list[int]
    reference: dict[str, Any]  # the reference's timing summary
    speedup_vs_reference: float
    speedup_vs_reference_err: float
    compile: dict[str, Any]  # torch.compile's timing summary (RUNG_BASELINE=compile)
    speedup_vs_compile: float
    speedup_vs_compile_err: float
    # the cost model's, where there is one
    flops: float
    bytes: float
    math: str
    input_bytes: int
    cost_estimated: bool
    flops_by_op: dict[str, float]
    achieved_gbps: float
    achieved_tflops: float
    wall_s: dict[str, Any]


class RooflineCase(TypedDict, total=False):
    """One case of the roofline rung (derived/roofline.py), as stored in its metrics' `cases`:
    the bench case's cost and median held against the device's ceilings and physical peaks. All
    in ms but the bytes, FLOPs and ratios; every key is written, a run stored before a key was
    added lacks it."""

    case: dict[str, Any]
    flops: float
    bytes: float
    ceiling: str  # the compute ceiling its FLOPs run against: "<math>_tflops"
    compute_ms: float
    memory_ms: float
    launch_ms: float  # the launch floor for how bench timed it; 0 where not measured
    attainable_ms: float  # the largest of the three
    l2_bytes: int
    dram_floor_bytes: int  # the bytes that must cross DRAM in every timed call
    floor_ms: float  # the physical limit at the peaks: faster is impossible
    slack: float
    faster_than_floor: bool
    measured_ms: float  # bench's median
    pct_of_roofline: float  # attainable / measured
    bound: str  # "compute", "memory" or "launch"
    cost: str  # "problem" (its cost model) or "estimated" (judge/estimate.py)


@dataclass(frozen=True)
class TimeToVerdict:
    """Where a run's wall time went, in seconds: `start_s` before its first rung began (a judge
    and its solution process starting, their imports, CUDA), `rungs_s` in its rungs but the tool
    rungs, `profile_s` in those (`TOOL_RUNGS`), `other_s` the rest (the controller between rungs,
    the answers crossing, the judge ending). The four add up to `wall_s`. None where it cannot be
    said: `wall_s` and `other_s` of a run that never finished (it may still be climbing, or was
    killed); `start_s` and `other_s` where the run recorded no rung's start."""

    wall_s: float | None
    start_s: float | None
    rungs_s: float
    profile_s: float
    other_s: float | None

    def to_dict(self) -> dict[str, float | None]:
        return dataclasses.asdict(self)


@dataclass
class Run:
    """One climb of the ladder by one solution on one device."""

    id: int
    problem: str
    solution: Solution
    device: Device
    seed: int
    rungs: list[RungResult] = field(default_factory=list)
    environment: dict[str, str] = field(default_factory=dict)
    started: float = 0.0
    finished: float | None = None

    @property
    def outcome(self) -> Outcome:
        """verified, failed or unverified (see `Outcome`)."""
        if any(r.status.bad and r.status != Status.INTERRUPTED for r in self.rungs):
            return Outcome.FAILED
        stopped = any(r.status == Status.INTERRUPTED for r in self.rungs)
        if stopped or not self.rungs or not self.finished or self.unverified:
            return Outcome.UNVERIFIED
        return Outcome.VERIFIED

    @property
    def ok(self) -> bool:
        """Verified: every rung that decides correctness ran and passed, and nothing failed. A
        version checked only as far as this machine allows (a CUDA kernel with no GPU) is not ok."""
        return self.outcome == Outcome.VERIFIED

    @property
    def unverified(self) -> list[RungResult]:
        """The correctness rungs that did not run and pass (absent ones as SKIPPED "not run")."""
        by_name = {r.name: r for r in self.rungs}
        if by_name.get("load", RungResult("load", Status.OK)).status == Status.SKIPPED:
            return [by_name["load"]]  # nothing ran: its reason is the reason (a missing extra)
        missing = [by_name.get(n) or RungResult(n, Status.SKIPPED, "not run") for n in CORRECTNESS_RUNGS]
        return [r for r in missing if r.status != Status.OK and not _nothing_left_to_check(r)]

    @property
    def why(self) -> str:
        """Why, in one line, beside the verdict that says where: the first failed rung's message, or
        why the first correctness rung that did not run did not; '' for a verified run."""
        first = next((r for r in self.rungs if r.status.bad), None) or next(iter(self.unverified), None)
        if first is None or self.ok:
            return ""
        return (first.message.splitlines() or [""])[0]

    @property
    def verdict(self) -> str:
        if not self.rungs:
            return "EMPTY"
        if any(r.status == Status.INTERRUPTED for r in self.rungs):
            return f"INTERRUPTED after {self.rungs[-1].name}"
        first_bad = next((r for r in self.rungs if r.status.bad), None)
        if first_bad is not None:
            return f"FAIL at {first_bad.name}"
        if not self.finished:
            return f"UNFINISHED after {self.rungs[-1].name}"
        # PASS says the solution was checked against the reference: not where a correctness rung
        # was SKIPPED (no GPU for its language, a case too large for this machine, RUNG_SKIP).
        unchecked = self.unverified
        return f"SKIPPED at {unchecked[0].name}" if unchecked else "PASS"

    @property
    def wall_s(self) -> float:
        return (self.finished or time.time()) - self.started

    @property
    def time_to_verdict(self) -> TimeToVerdict:
        """Its wall time split into start, rungs, profile and the rest (see `TimeToVerdict`)."""
        profile_s = round(sum(r.seconds for r in self.rungs if r.name in TOOL_RUNGS), 3)
        rungs_s = round(sum(r.seconds for r in self.rungs if r.name not in TOOL_RUNGS), 3)
        first = self.rungs[0].began_s if self.rungs else None
        start_s = None if first is None else round(first, 3)
        wall_s = None if self.finished is None else round(self.finished - self.started, 3)
        other_s = None
        if wall_s is not None and start_s is not None:
            other_s = round(wall_s - start_s - rungs_s - profile_s, 3)
        return TimeToVerdict(wall_s, start_s, rungs_s, profile_s, other_s)

    def rung(self, name: str) -> RungResult | None:
        """This run's result of the rung `name`; None where it did not run."""
        return next((r for r in self.rungs if r.name == name), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "run": self.id,
            "problem": self.problem,
            "solution": dataclasses.asdict(self.solution),
            "device": dataclasses.asdict(self.device),
            "seed": self.seed,
            "ok": self.ok,
            "outcome": self.outcome.value,
            "verdict": self.verdict,
            "rungs": [r.to_dict() for r in self.rungs],
            "environment": self.environment,
            "started": self.started,
            "finished": self.finished,
            "time_to_verdict": self.time_to_verdict.to_dict(),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Run:
        check_schema(d)
        return cls(
            id=int(d["run"]),
            problem=d["problem"],
            solution=Solution(**d["solution"]),
            device=Device(**d["device"]),
            seed=int(d["seed"]),
            rungs=[RungResult.from_dict(r) for r in d["rungs"]],
            environment=dict(d.get("environment", {})),
            started=float(d.get("started", 0.0)),
            finished=d.get("finished"),
        )


def check_schema(d: dict[str, Any]) -> None:
    if d.get("schema") != SCHEMA:
        raise ValueError(f"schema {d.get('schema')!r} is not {SCHEMA!r}")


def dumps(obj: Any) -> str:
    """Strict JSON for spec objects and plain data. A non-finite float is null, never a string a
    reader must know to parse; its object says why under `null_reasons` ({"psnr_db": "infinite"}:
    outputs equal to the reference)."""
    return json.dumps(_jsonable(obj), sort_keys=False, allow_nan=False)


NON_FINITE = {"nan": "not a number", "inf": "infinite", "-inf": "negative infinite"}


def _jsonable(obj: Any) -> Any:
    if hasattr(obj, "to_dict"):
        return _jsonable(obj.to_dict())
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return _jsonable(dataclasses.asdict(obj))
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, dict):
        out = {str(k): _jsonable(v) for k, v in obj.items()}
        reasons = {str(k): NON_FINITE[repr(v)] for k, v in obj.items() if _non_finite(v)}
        return {**out, "null_reasons": reasons} if reasons else out
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if _non_finite(obj):
        return None
    return obj


def _non_finite(value: Any) -> bool:
    return isinstance(value, float) and not math.isfinite(value)
