"""The person's channel into a running optimize loop: hints and pause, per problem, as files under
`.rung/steer/<problem>/` that `rung hint` writes and the loop reads between rounds.

`hints.jsonl` holds one hint a line ({"hint", "added"}), appended, so a hint written while a
round runs reaches the agent in the next one; the loop takes every hint of the file when it
starts and each new line after. `paused`, while it exists, holds the loop between rounds (the
agent's state and the budgets kept; paused time is not spent wall time) until `rung hint
PROBLEM --resume` removes it. Files, not a socket: a loop run by a script or in another terminal
is steered the same way, and what was said stays on disk beside the runs it led to.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from rung.errors import UsageError


class Steering:
    """One problem's hints and pause marker in one workspace."""

    def __init__(self, workspace: Path, problem: str) -> None:
        self.folder = workspace / ".rung" / "steer" / problem
        self.hints_file = self.folder / "hints.jsonl"
        self.pause_file = self.folder / "paused"
        self._read = 0  # lines of hints.jsonl already handed to the loop

    def add_hint(self, text: str) -> None:
        if not text.strip():
            raise UsageError("an empty hint: say what the agent should try")
        self.folder.mkdir(parents=True, exist_ok=True)
        with self.hints_file.open("a") as f:
            f.write(json.dumps({"hint": text.strip(), "added": time.time()}) + "\n")

    def new_hints(self) -> list[str]:
        """The hints added since the last call (every one, the first time)."""
        if not self.hints_file.is_file():
            return []
        lines = self.hints_file.read_text().splitlines()
        fresh, self._read = lines[self._read :], len(lines)
        return [json.loads(line)["hint"] for line in fresh if line.strip()]

    def hints(self) -> list[str]:
        if not self.hints_file.is_file():
            return []
        return [json.loads(line)["hint"] for line in self.hints_file.read_text().splitlines() if line.strip()]

    def clear_hints(self) -> None:
        self.hints_file.unlink(missing_ok=True)

    def pause(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        self.pause_file.touch()

    def resume(self) -> None:
        self.pause_file.unlink(missing_ok=True)

    @property
    def paused(self) -> bool:
        return self.pause_file.exists()
