"""llm: asks a language model for the next versions, k calls at once, yielding each as it arrives
so the loop climbs the first while the others are still being written.

Every call gets the same prompt (prompt.build: problem, device, best versions and their ladders,
last failures, hints, context snippets); replies differ by sampling. A reply without one
complete solution file, or a call that times out or is rate limited past its retries, is a
proposal with an `error`: that candidate fails with the reason and the round goes on. A key
refused, an unknown model or an unreachable endpoint ends the loop (UsageError, exit code 2).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any

from rung.agents import LoopState, Proposal, prompt
from rung.agents.providers import CallFailed, Provider

# The context search: a query in, ranked snippets (with path, line, text) out.
Search = Callable[[str], list[Any]]


class LLMAgent:
    name = "llm"

    def __init__(self, provider: Provider, search: Search | None = None) -> None:
        self.provider = provider
        self.search = search

    def propose(self, state: LoopState, k: int) -> Iterator[Proposal]:
        text = prompt.build(state, self._snippets(state))
        entry = prompt.entry_point(state.problem.path)
        with ThreadPoolExecutor(max_workers=k, thread_name_prefix="rung-llm") as pool:
            futures = [pool.submit(self._one, text, entry) for _ in range(k)]
            for done in as_completed(futures):
                yield done.result()

    def _snippets(self, state: LoopState) -> list[Any]:
        """Top snippets for the problem and, where the last candidate failed, its failure."""
        if self.search is None:
            return []
        query = f"{state.problem.name} {state.problem.doc.splitlines()[0] if state.problem.doc else ''}"
        last = state.tried[-1].run if state.tried else None
        if last is not None and not last.ok:
            failed = next((r for r in last.rungs if r.status.value in ("FAILED", "ERROR")), None)
            if failed:
                query += " " + failed.message.splitlines()[0][:200]
        return self.search(query)[:4]

    def _one(self, text: str, entry: str) -> Proposal:
        t0 = time.monotonic()
        try:
            reply = self.provider.complete(prompt.SYSTEM, text)
        except CallFailed as e:
            return Proposal("", "no reply", prompt=text, error=str(e), agent_s=time.monotonic() - t0)
        source, note, error = prompt.read_reply(reply.text, entry)
        return Proposal(
            source,
            note,
            prompt=text,
            reply=reply.text,
            error=error,
            tokens_in=reply.tokens_in,
            tokens_out=reply.tokens_out,
            cost_usd=self.provider.config.cost(reply.tokens_in, reply.tokens_out),
            agent_s=time.monotonic() - t0,
        )
