"""Agents propose the next kernel versions; the optimize loop climbs the ladder on each.

An agent is one module with one class behind a small contract: `propose(state, k)` yields up to
k `Proposal`s, or none when it has nothing more to offer. It may yield them as they are written
(the llm agent writes k at once and yields each as it arrives), so the loop climbs the first
while the others are still being written. A proposal without a source is a failed candidate:
its `error` says why (a reply with no solution file, a timeout), and the round goes on.

`replay` plays back recorded versions; `tune` varies the values a solution declares in `TUNE`;
`llm` asks a language model through its provider's official SDK.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from rung.spec import Device, Problem, Run


@dataclass
class ToolCall:
    """One tool an agent called while writing a version, and what it cost: wall seconds, the
    tokens of the model turn that asked for it (counted on that turn's first call), and the run
    a climb gave (compile, check)."""

    tool: str
    args: dict[str, Any]
    seconds: float
    tokens_in: int = 0
    tokens_out: int = 0
    run: int | None = None
    error: str = ""  # the tool's one-line refusal, sent back to the agent as the result

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Proposal:
    source: str  # a complete solution file; empty when the agent failed to produce one
    note: str  # what this version changes, in a few words
    prompt: str = ""  # what the agent was asked (LLM agents), kept with the version
    reply: str = ""  # what it answered
    error: str = ""  # why there is no source
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float | None = None  # None where the price of the model is not known
    agent_s: float = 0.0  # wall seconds the agent spent writing it
    tool_calls: list[ToolCall] = field(default_factory=list)
    hints: list[str] = field(default_factory=list)  # the person's hints it was written under
    checked: int | None = None  # a full check the agent already ran on exactly this source


@dataclass
class Tried:
    """A candidate already climbed: its run and its source, for the agent to learn from; for a
    version the loop chose, the run that profiled it (rung.chosen)."""

    run: Run
    source: str
    profile: Run | None = None


@dataclass
class LoopState:
    """What an agent may know when it proposes: the problem, the device, the best so far (while
    `repairing`, the failing version to make pass), what was tried (oldest first), why proposals
    gave no version, the person's hints, and the kernel language they pinned ("" for any)."""

    problem: Problem
    device: Device
    best: Tried
    tried: list[Tried] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    hints: list[str] = field(default_factory=list)
    round: int = 1
    repairing: bool = False
    backend: str = ""
    workspace: Path | None = None  # the folder holding .rung/

    @property
    def versions(self) -> Path:
        """Where the loop's versions are written, by content hash."""
        if self.workspace is None:
            raise ValueError("a loop state without a workspace keeps no versions")
        return self.workspace / ".rung" / "versions" / self.problem.name


class Agent(Protocol):
    name: str

    def propose(self, state: LoopState, k: int) -> Iterable[Proposal]: ...
