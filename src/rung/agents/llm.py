"""llm: asks a language model for the next versions, k conversations at once, yielding each
version as it arrives.

Every conversation starts from the same prompt (prompt.build: problem, device, best versions and
their ladders, last failures, hints, context snippets, the language's idioms). The model may then
call tools (rung.agents.tools: compile, check, read an artifact, search the context, diff,
history, show) for up to `max_tool_turns` replies, reading what it chooses, and ends with a reply
holding one complete solution file. Where the tool turns run out, the tools it still asks for are
refused, saying so, and its next reply is read as the answer.

A reply without one complete solution file, or a call that times out or is rate limited past its
retries, is a proposal with an `error`: that candidate fails with the reason and the round goes
on. A key refused, an unknown model or an unreachable endpoint ends the loop (UsageError).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from rung.agents import LoopState, Proposal, ToolCall, prompt
from rung.agents.providers import CallFailed, Provider, Turn
from rung.agents.tools import TOOLS, Toolbox

# The context search: a query in, ranked snippets (with path, line, text) out.
Search = Callable[[str], list[Any]]
OUT_OF_TURNS = "no more tool calls for this version: answer now with the complete solution file"


class LLMAgent:
    name = "llm"

    def __init__(
        self, provider: Provider, search: Search | None = None, workspace: Path | None = None
    ) -> None:
        self.provider = provider
        self.search = search
        self.workspace = workspace  # where tools climb and read; None offers no tools

    def propose(self, state: LoopState, k: int) -> Iterator[Proposal]:
        text = prompt.build(state, self._snippets(state), tools=self.workspace is not None)
        with ThreadPoolExecutor(max_workers=k, thread_name_prefix="rung-llm") as pool:
            futures = [pool.submit(self._one, state, text) for _ in range(k)]
            for done in as_completed(futures):
                yield done.result()

    def _snippets(self, state: LoopState) -> list[Any]:
        """Top snippets for the problem (in the pinned language) and, where the last candidate
        failed, its failure."""
        if self.search is None:
            return []
        query = f"{state.problem.name} {state.problem.doc.splitlines()[0] if state.problem.doc else ''}"
        if state.backend:
            query += f" {state.backend}"
        last = state.tried[-1].run if state.tried else state.best.run
        if not last.ok:
            failed = next((r for r in last.rungs if r.status.value in ("FAILED", "ERROR")), None)
            if failed:
                query += " " + failed.message.splitlines()[0][:200]
        return self.search(query)[:4]

    def _one(self, state: LoopState, text: str) -> Proposal:
        """One conversation: tool turns, then the reply read into a version."""
        t0 = time.monotonic()
        toolbox = Toolbox(state, self.workspace, state.versions) if self.workspace is not None else None
        talk = self.provider.conversation(prompt.SYSTEM, text, TOOLS if toolbox else [])
        calls: list[ToolCall] = []
        tokens = [0, 0]
        try:
            turn = self._turn(talk.ask(), tokens)
            for turns in range(1, self.provider.config.max_tool_turns + 2):
                if not turn.calls or toolbox is None:
                    break
                if turns > self.provider.config.max_tool_turns:
                    talk.answer([(c, OUT_OF_TURNS, True) for c in turn.calls])
                else:
                    talk.answer(self._run_tools(toolbox, turn, calls))
                turn = self._turn(talk.ask(), tokens)
        except CallFailed as e:
            return Proposal(
                "",
                "no reply",
                prompt=text,
                error=str(e),
                tokens_in=tokens[0],
                tokens_out=tokens[1],
                cost_usd=self.provider.config.cost(tokens[0], tokens[1]),
                agent_s=time.monotonic() - t0,
                tool_calls=calls,
                hints=list(state.hints),
            )
        source, note, error = prompt.read_reply(turn.text, prompt.entry_point(state.problem.path))
        checked = (
            toolbox.checked.get(hashlib.sha256(source.encode()).hexdigest()) if toolbox and source else None
        )
        return Proposal(
            source,
            note,
            prompt=text,
            reply=turn.text,
            error=error,
            tokens_in=tokens[0],
            tokens_out=tokens[1],
            cost_usd=self.provider.config.cost(tokens[0], tokens[1]),
            agent_s=time.monotonic() - t0,
            tool_calls=calls,
            hints=list(state.hints),
            checked=checked,
        )

    @staticmethod
    def _turn(turn: Turn, tokens: list[int]) -> Turn:
        tokens[0] += turn.tokens_in
        tokens[1] += turn.tokens_out
        return turn

    @staticmethod
    def _run_tools(toolbox: Toolbox, turn: Turn, calls: list[ToolCall]) -> list[tuple[Any, str, bool]]:
        """Each tool the turn asks for, in order; the turn's tokens counted on its first call."""
        results = []
        for i, request in enumerate(turn.calls):
            text, refused, record = toolbox.call(request)
            if i == 0:
                record.tokens_in, record.tokens_out = turn.tokens_in, turn.tokens_out
            calls.append(record)
            results.append((request, text, refused))
        return results
