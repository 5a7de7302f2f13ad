"""tune: varies the module-level values a solution lists in `TUNE = {name: [values, ...]}`.

Every variant is the solution's source with those assignments rewritten, so it is a real version
that climbs the whole ladder. All combinations are tried when there are at most `budget`, else a
seeded random sample of `budget`; the solution's own combination is left out.
"""

from __future__ import annotations

import ast
import itertools
import random
from typing import Any

from rung.agents import LoopState, Proposal
from rung.errors import UsageError


class TuneAgent:
    name = "tune"

    def __init__(self, source: str, budget: int = 16, seed: int = 0) -> None:
        self.source = source
        self.assignments = _assignments(source)
        self.space = _tune_space(source, self.assignments)
        names = list(self.space)
        current = tuple(ast.literal_eval(self.assignments[n][2]) for n in names)
        combos = [c for c in itertools.product(*self.space.values()) if c != current]
        if len(combos) > budget:
            combos = random.Random(seed).sample(combos, budget)
        self.queue = [dict(zip(names, c, strict=True)) for c in combos]

    def propose(self, state: LoopState, k: int) -> list[Proposal]:
        taken, self.queue = self.queue[:k], self.queue[k:]
        return [
            Proposal(
                rewrite(self.source, self.assignments, values),
                ", ".join(f"{n}={v!r}" for n, v in values.items()),
            )
            for values in taken
        ]


def _assignments(source: str) -> dict[str, tuple[int, int, str]]:
    """Module-level `NAME = literal`: name -> (start offset, end offset, literal source)."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    starts = [0, *itertools.accumulate(len(x) for x in lines)]
    found = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            v = node.value
            assert v.end_lineno is not None and v.end_col_offset is not None
            begin = starts[v.lineno - 1] + v.col_offset
            end = starts[v.end_lineno - 1] + v.end_col_offset
            found[node.targets[0].id] = (begin, end, source[begin:end])
    return found


def _tune_space(source: str, assignments: dict[str, tuple[int, int, str]]) -> dict[str, list[Any]]:
    if "TUNE" not in assignments:
        raise UsageError("the solution declares no TUNE = {name: [values, ...]}")
    try:
        space = ast.literal_eval(assignments["TUNE"][2])
    except ValueError:
        raise UsageError("TUNE must be a literal dict of lists") from None
    if not isinstance(space, dict) or not all(isinstance(v, list) and v for v in space.values()):
        raise UsageError("TUNE must map names to non-empty lists of values")
    for name in space:
        if name not in assignments or name == "TUNE":
            raise UsageError(f"TUNE names {name}, which the source does not assign at module level")
        try:
            ast.literal_eval(assignments[name][2])
        except ValueError:
            raise UsageError(f"TUNE names {name}, whose value is not a literal") from None
    return space


def rewrite(source: str, assignments: dict[str, tuple[int, int, str]], values: dict[str, Any]) -> str:
    """`source` with each named module-level value replaced, last offsets first."""
    for name in sorted(values, key=lambda n: assignments[n][0], reverse=True):
        begin, end, _ = assignments[name]
        source = source[:begin] + repr(values[name]) + source[end:]
    return source
