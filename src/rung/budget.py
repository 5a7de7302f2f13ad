"""What an optimize loop may spend and has spent: the budget, the ledger, the reason to stop once
a budget is spent, and the clock that splits a round's time between waiting for the agent,
climbing the ladder, and the loop's own work."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from rung.agents import Proposal


@dataclass
class Budget:
    rounds: int = 10
    wall_s: float | None = None
    tokens: int | None = None
    usd: float | None = None


@dataclass
class Spent:
    rounds: int = 0
    wall_s: float = 0.0
    tokens: int = 0
    usd: float = 0.0
    overhead_s: float = 0.0  # the loop's own time: rounds less agent waits and climbs
    paused_s: float = 0.0  # held by the person (rung hint --pause); not spent wall time

    def left(self, budget: Budget) -> dict[str, Any]:
        left: dict[str, Any] = {"rounds": budget.rounds - self.rounds}
        if budget.wall_s is not None:
            left["wall_s"] = round(budget.wall_s - self.wall_s, 1)
        if budget.tokens is not None:
            left["tokens"] = budget.tokens - self.tokens
        if budget.usd is not None:
            left["usd"] = round(budget.usd - self.usd, 4)
        return left


def budget_reason(budget: Budget, spent: Spent) -> str:
    """Why the loop stops for its budget, or '' while every budget has some left."""
    if spent.rounds >= budget.rounds:
        return f"round budget ({budget.rounds}) spent"
    if budget.wall_s is not None and spent.wall_s >= budget.wall_s:
        return f"time budget ({budget.wall_s:g} s) spent: {spent.wall_s:.0f} s"
    if budget.tokens is not None and spent.tokens >= budget.tokens:
        return f"token budget ({budget.tokens}) spent: {spent.tokens} tokens"
    if budget.usd is not None and spent.usd >= budget.usd:
        return f"money budget (${budget.usd:g}) spent: ${spent.usd:.2f}"
    return ""


class RoundTimer:
    """Seconds a round spent waiting for the agent and climbing, the rest being the loop's own."""

    def __init__(self) -> None:
        self.waited = 0.0
        self.climbed = 0.0

    def waiting(self, proposals: Iterator[Proposal]) -> Iterator[Proposal]:
        while True:
            t = time.monotonic()
            p = next(proposals, None)
            self.waited += time.monotonic() - t
            if p is None:
                return
            yield p

    @contextmanager
    def climbing(self) -> Iterator[None]:
        t = time.monotonic()
        try:
            yield
        finally:
            self.climbed += time.monotonic() - t
