"""The optimize loop profiles the versions it chooses, not every candidate.

Nsight Compute replays each kernel of a call many times (seconds a kernel) and proton's scopes
build an instrumented copy of it, so a profile of every candidate would cost most of a round and
tell the agent about versions it drops. Candidates climb with `profile` and `scopes` left out
(beside whatever the person left out); the version the loop builds on, each new best, is then
profiled once by a second climb of just the rungs those two stand on (and compile, so a build
is read from the cache as a compile figure, not redone inside run). That climb is another run
of the same solution (same hash, same parent); the agent is shown its summary beside the best.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rung import knobs, runner
from rung.ladder import LADDER
from rung.spec import Device, Problem, Run
from rung.store import Store

DEFERRED = ("profile", "scopes")


def standing_on(names: tuple[str, ...]) -> tuple[str, ...]:
    """`names` and every rung they need, transitively, in ladder order."""
    needs = {spec.name: spec.needs for spec in LADDER}
    wanted: set[str] = set()
    stack = list(names)
    while stack:
        name = stack.pop()
        if name not in wanted:
            wanted.add(name)
            stack.extend(needs[name])
    return tuple(spec.name for spec in LADDER if spec.name in wanted)


@contextmanager
def candidates_deferred() -> Iterator[None]:
    """RUNG_SKIP for the climbs of candidates: the person's, and the deferred rungs."""
    with knobs.scoped(RUNG_SKIP=",".join(sorted(runner.skipped_rungs() | set(DEFERRED)))):
        yield


def wanted(device: Device) -> tuple[str, ...]:
    """The deferred rungs a chosen version gets here: none without a GPU, none the person left
    out, scopes only when asked (RUNG_SCOPES=1)."""
    if device.kind != "cuda":
        return ()
    left_out = runner.skipped_rungs() | (set() if int(knobs.get("RUNG_SCOPES")) else {"scopes"})
    return tuple(n for n in DEFERRED if n not in left_out)


def profile(store: Store, problem: Problem, device: Device, chosen: Run, path: Path) -> Run | None:
    """The profile climb of `chosen`, whose source is at `path`: another run of the same solution;
    None where none is due."""
    rungs = wanted(device)
    if not rungs or not chosen.ok:
        return None
    return runner.climb(
        store, problem, device, path, parent=chosen.solution.parent, only=standing_on(("compile", *rungs))
    )
