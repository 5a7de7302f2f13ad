"""What the judge sees of a call for itself, rather than reading it in the solution process's report.

The solution's code runs in the process that writes the report, and can rewrite any of it. The
judge instead reads back the inputs it placed (it has them mapped), so a changed input is its own
finding, and an output that shares memory with an input shows as that input now holding the
output's values; and it counts the solution process's threads in /proc, as the parent it is.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import torch

from rung.common.trees import leaves

_EXITING_S = 1.0  # how long a thread that has just ended may linger in /proc


def bits_differ(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Element mask where a and b differ, comparing NaNs by bits rather than by value."""
    if a.is_floating_point():
        return ~((a == b) | (torch.isnan(a) & torch.isnan(b)))
    return a != b


ALIASED, MUTATED = "no_alias", "inputs_unchanged"  # the guard's checks these findings fall under


def input_changes(
    inputs: Any, now: list[torch.Tensor], outs: list[torch.Tensor | None], skip: set[int]
) -> list[tuple[str, str]]:
    """Each input leaf (but the `skip`ped ones, the format's output buffers) that no longer holds
        what the judge placed, named with its first changed index; one that now holds exactly an
        output's values is named as that output's alias (a tensor returned as the output while it
        lives in the input's memory). An alias whose answer equals the input bit for bit changes
        nothing and is not seen here (the report's own claim still names it). Each finding is
    (the check it falls under, what it says)."""
    found = []
    for i, (before, after) in enumerate(zip(leaves(inputs), now, strict=False)):
        if i in skip or before.device.type == "meta":
            continue
        if torch.equal(before, after):  # the common case, without a mask the input's size
            continue
        changed = bits_differ(before, after)
        if not bool(changed.any()):
            continue
        alias = next(
            (
                j
                for j, o in enumerate(outs)
                if o is not None
                and o.dtype == after.dtype
                and o.numel() == after.numel()
                and not bool(bits_differ(o.reshape(-1), after.to(o.device).reshape(-1)).any())
            ),
            None,
        )
        at = tuple(int(x) for x in changed.nonzero()[0])
        said = f"input {i} was modified in place ({int(changed.sum())} elements changed, first at {at})"
        found.append((MUTATED, said))
        if alias is not None:
            found.append(
                (ALIASED, f"output {alias} shares memory with input {i} (input {i} now holds its values)")
            )
    return found


def tasks(pid: int | None) -> dict[int, str] | None:
    """The threads of process `pid` from /proc, each by its name (comm); None where /proc cannot
    be read (not Linux, the process gone)."""
    if pid is None:
        return None
    folder = Path(f"/proc/{pid}/task")
    try:
        tids = [int(t) for t in os.listdir(folder)]
    except OSError:
        return None
    found = {}
    for tid in tids:
        try:
            found[tid] = (folder / str(tid) / "comm").read_text(errors="replace").strip()[:32]
        except OSError:
            continue  # ended between the listing and the read
    return found


class Threads:
    """The solution process's threads as the judge counts them: a baseline taken before the
    solution's module is imported (the harness has started its libraries' threads by then), and
    the threads found since. A later thread named as one of the baseline's named library threads
    (a name other than the main thread's: CUDA's) is taken for the library's own; on a GPU, any
    thread named other than the main thread is (CUDA's and CUPTI's libraries name the threads they
    start as they go, and Python before 3.14 names none: a solution's keeps its starter's name)."""

    def __init__(self) -> None:
        self.pid: int | None = None
        self.baseline: dict[int, str] | None = None

    def note(self, pid: int | None) -> None:
        """Called before each request that may import the solution: a process not seen before has
        not imported it yet (nothing but a request the judge sends does), and its count is taken
        now."""
        if pid is None or pid == self.pid:
            return
        self.pid, self.baseline = pid, tasks(pid)

    def stray(self, pid: int | None, named_are_libraries: bool = False) -> tuple[list[str], str]:
        """The threads running now that were not there before the solution was imported, each as
        'tid (name)'; and '' or why the judge could not count them itself. A thread just joined
        can linger in /proc for a moment as it exits: one found is looked for again for up to
        `_EXITING_S` before it counts."""
        if pid is None or pid != self.pid or self.baseline is None:
            return [], "no count taken before the solution process imported the solution"
        main = self.baseline.get(pid, "")
        library = {name for name in self.baseline.values() if name != main}
        deadline = time.monotonic() + _EXITING_S
        while True:
            now = tasks(pid)
            if now is None:
                return [], f"/proc/{pid}/task cannot be read here"
            new = [
                f"{t} ({name})"
                for t, name in sorted(now.items())
                if t not in self.baseline
                and name not in library
                and not (named_are_libraries and name != main)
            ]
            if not new or time.monotonic() > deadline:
                return new, ""
            time.sleep(0.05)
