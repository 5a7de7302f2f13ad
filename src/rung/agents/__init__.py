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
from dataclasses import dataclass, field
from typing import Protocol

from rung.spec import Device, Problem, Run


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


@dataclass
class Tried:
    """A candidate already climbed: its run and its source, for the agent to learn from."""

    run: Run
    source: str


@dataclass
class LoopState:
    """What an agent may know when it proposes: the problem, the device, the best so far, what
    was tried (oldest first), why proposals gave no version, and the person's hints."""

    problem: Problem
    device: Device
    best: Tried
    tried: list[Tried] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    hints: list[str] = field(default_factory=list)
    round: int = 1


class Agent(Protocol):
    name: str

    def propose(self, state: LoopState, k: int) -> Iterable[Proposal]: ...
