"""replay: plays back recorded solution files in order, k a round (for demos and tests)."""

from __future__ import annotations

from pathlib import Path

from rung.agents import LoopState, Proposal
from rung.errors import UsageError


class ReplayAgent:
    name = "replay"

    def __init__(self, files: list[Path]) -> None:
        for f in files:
            if not f.is_file():
                raise UsageError(f"{f}: no such file to replay")
        self.queue = list(files)

    def propose(self, state: LoopState, k: int) -> list[Proposal]:
        taken, self.queue = self.queue[:k], self.queue[k:]
        return [Proposal(f.read_text(), f"replayed {f.name}") for f in taken]
