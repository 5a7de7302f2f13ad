"""Agents propose the next kernel versions; the optimize loop climbs the ladder on each.

An agent is one module with one class behind a small contract: `propose(best, k)` returns up to
k `Proposal`s (complete solution files), or none when it has nothing more to offer. `replay`
plays back recorded versions; `tune` varies the values a solution declares in `TUNE`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass
class Proposal:
    source: str  # a complete solution file
    note: str  # what this version changes, in a few words
    prompt: str = ""  # what the agent was asked (LLM agents), kept with the version
    reply: str = ""  # what it answered


class Agent(Protocol):
    name: str

    def propose(self, best_source: str, k: int) -> list[Proposal]: ...
