"""replay: plays back what was recorded, k a round, for demos, tests and evaluations with no key.

Solution files (`--replay v2.py`) are proposed as they are, in order. A recorded conversation
file (`--replay talk.json`, rung.agents.recorded) is replayed through the llm agent itself: a
local endpoint answers the real SDK with the recorded replies, so the recorded tool calls run
(drafts compiled and checked in judges, artifacts read) and the versions come out of the
replies as a model's would.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from rung.agents import LoopState, Proposal
from rung.agents.llm import LLMAgent
from rung.agents.providers import LLMConfig, Provider
from rung.agents.recorded import RecordedEndpoint
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


class ConversationReplay:
    """The llm agent against a recorded endpoint; as many conversations a round as are left."""

    name = "replay"

    def __init__(self, recording: Path, workspace: Path | None) -> None:
        if not recording.is_file():
            raise UsageError(f"{recording}: no such file to replay")
        provider = json.loads(recording.read_text()).get("provider", "anthropic")
        self.endpoint = RecordedEndpoint.load(recording).__enter__()
        base_url = self.endpoint.url if provider == "anthropic" else self.endpoint.url + "/v1"
        config = LLMConfig.load(None, provider=provider, model="recorded", base_url=base_url, max_retries=0)
        self.llm = LLMAgent(Provider(config, key="recorded"), None, workspace)

    def propose(self, state: LoopState, k: int) -> Iterable[Proposal]:
        n = min(k, self.endpoint.left())
        return self.llm.propose(state, n) if n else []

    def close(self) -> None:
        self.endpoint.__exit__(None, None, None)
