"""The llm agent end to end through the real SDKs against a local endpoint that speaks the
providers' HTTP APIs with recorded replies (rung.agents.recorded): tool calls, repair of a
failing version, parallel candidates, and a hint (and a pause) arriving mid-run. No key."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from rung import api, runner
from rung.agents import LoopState, Tried, idioms, prompt
from rung.agents.llm import OUT_OF_TURNS, LLMAgent
from rung.agents.providers import LLMConfig, Provider
from rung.agents.recorded import RecordedEndpoint
from rung.agents.replay import ConversationReplay
from rung.errors import UsageError
from rung.optimize import Budget, Rules, optimize
from rung.steer import Steering
from rung.store import Store
from tests.conftest import FIXTURES

TINY = FIXTURES / "tiny"
GOOD = TINY / "solutions" / "good.py"
WRONG_SHAPE = TINY / "solutions" / "wrong_shape.py"

ADD = "def custom_kernel(x):\n    return x + x\n"
SCALED = "def custom_kernel(x):\n    return x * 2.0\n"
STILL_WRONG = "def custom_kernel(x):\n    return (x * 2)[1:]\n"


def answer(source: str, note: str) -> dict:
    return {"text": f"NOTE: {note}\n```python\n{source}```\n", "tokens": [1200, 300]}


def agent(endpoint: RecordedEndpoint, workspace: Path, provider: str = "anthropic") -> LLMAgent:
    base_url = endpoint.url if provider == "anthropic" else endpoint.url + "/v1"
    config = LLMConfig.load(
        None,
        provider=provider,
        model="recorded",
        base_url=base_url,
        max_retries=0,
        price_in_usd_per_mtok=3.0,
        price_out_usd_per_mtok=15.0,
    )
    return LLMAgent(Provider(config, key="not-a-key"), None, workspace)


def proposals(workspace: Path) -> list[dict]:
    db = sqlite3.connect(workspace / ".rung" / "rung.db")
    db.row_factory = sqlite3.Row
    return [dict(r) for r in db.execute("SELECT * FROM proposals ORDER BY rowid")]


def test_the_agent_reads_what_it_chooses_through_tools(tmp_path):
    """One conversation: compile a draft, look at the history, check a version, read an artifact
    and diff two runs, then answer with the checked version, which is not climbed again."""
    talk = [
        {"tools": [{"name": "compile", "args": {"source": STILL_WRONG}}, {"name": "history", "args": {}}]},
        {"tools": [{"name": "check", "args": {"source": ADD}}]},
        {
            "tools": [
                {"name": "read_artifact", "args": {"path": ".rung/runs/3/result.json", "length": 200}},
                {"name": "read_artifact", "args": {"path": "../outside.txt"}},
                {"name": "diff", "args": {"run_a": 1, "run_b": 3}},
            ]
        },
        answer(ADD, "add instead of multiply"),
    ]
    events: list[dict] = []
    with RecordedEndpoint([talk]) as endpoint:
        outcome = optimize(
            Store(tmp_path), TINY, agent(endpoint, tmp_path), GOOD, Budget(rounds=1), on_event=events.append
        )
        sent = [json.dumps(r) for r in endpoint.requests]
    assert [r.id for r in outcome.candidates] == [3]  # the agent's own check (run 3), not a new climb
    assert outcome.candidates[0].verdict == "PASS"
    (row,) = proposals(tmp_path)
    calls = json.loads(row["tool_calls"])
    assert [c["tool"] for c in calls] == [
        "compile",
        "history",
        "check",
        "read_artifact",
        "read_artifact",
        "diff",
    ]
    assert [c["run"] for c in calls] == [2, None, 3, None, None, None]
    assert calls[0]["tokens_in"] == 1000 and calls[2]["tokens_in"] == 1000 and calls[1]["tokens_in"] == 0
    assert "outside the workspace" in calls[4]["error"] and calls[3]["error"] == ""
    assert calls[2]["args"]["source"] == ADD  # a short source kept as it is; a long one by its hash
    assert row["run_id"] == 3 and row["tokens_in"] == 3 * 1000 + 1200 and row["tokens_out"] == 3 * 200 + 300
    assert row["cost_usd"] == pytest.approx((4200 * 3 + 900 * 15) / 1e6)
    # What the tools answered went back to the model: the compile-only ladder, the page, the diff.
    compiled = Store(tmp_path).run(2)
    assert {r.name for r in compiled.rungs if r.status.value != "SKIPPED"} <= {"load", "compile", "dump"}
    assert "run 2: SKIPPED at run" in sent[1] and "left out: only load, compile, dump" in sent[1]
    assert "run 3: PASS" in sent[2]
    assert '\\"total_bytes\\"' in sent[3] and "source_diff" in sent[3] and "return x + x" in sent[3]
    assert [e["tool"] for e in events if e["event"] == "tool"][:2] == ["compile", "history"]


def test_tools_refuse_in_words_and_the_tool_turns_are_bounded(tmp_path):
    """An unknown tool, bad arguments and a search answer in text the model reads; past
    max_tool_turns the tools asked for are refused and the next reply is the answer."""
    api.context_add(str(TINY / "problem.py"), tmp_path)
    store = Store(tmp_path)
    problem, device = runner.describe(TINY, store.root / "scratch")
    best = runner.climb(store, problem, device, GOOD)
    state = LoopState(problem, device, Tried(best, GOOD.read_text()), workspace=tmp_path)
    state.versions.mkdir(parents=True)
    talk = [
        {
            "tools": [
                {"name": "rm_rf", "args": {}},
                {"name": "show", "args": {"run": 1, "colour": "red"}},
                {"name": "search_context", "args": {"query": "double a float32 vector"}},
            ]
        },
        {"tools": [{"name": "history", "args": {}}]},
        answer(ADD, "add"),
    ]
    with RecordedEndpoint([talk]) as endpoint:
        llm = agent(endpoint, tmp_path)
        llm.provider.config.max_tool_turns = 1
        (p,) = list(llm.propose(state, 1))
        sent = [json.dumps(r) for r in endpoint.requests]
    assert p.source == ADD and [c.tool for c in p.tool_calls] == ["rm_rf", "show", "search_context"]
    assert "no tool 'rm_rf'" in p.tool_calls[0].error and "bad arguments" in p.tool_calls[1].error
    assert "problem.py" in sent[1] and "double a float32 vector" in sent[1]
    assert OUT_OF_TURNS in sent[2]  # the history call past the limit was refused, not run
    assert p.tokens_in == 2 * 1000 + 1200


def test_a_failing_version_is_repaired_first(tmp_path):
    """From a failing stored run, replayed through the OpenAI SDK: the agent is shown the failure
    and its figures; a version that still fails costs a repair round, the next passes and
    becomes the best."""
    store = Store(tmp_path)
    problem, device = runner.describe(TINY, store.root / "scratch")
    failing = runner.climb(store, problem, device, WRONG_SHAPE)
    assert failing.verdict.startswith("FAIL")
    recording = tmp_path / "repair.json"
    talks = [[answer(STILL_WRONG, "drop the first")], [answer(ADD, "whole output")]]
    recording.write_text(json.dumps({"provider": "openai", "conversations": talks}))
    events: list[dict] = []
    replayed = ConversationReplay(recording, tmp_path)
    try:
        outcome = optimize(store, TINY, replayed, failing, Budget(rounds=5), on_event=events.append)
    finally:
        replayed.close()
    kinds = [e["event"] for e in events]
    assert kinds[:2] == ["start", "repairing"] and "repaired" in kinds
    assert [r.verdict.split(" at ")[0] for r in outcome.candidates] == ["FAIL", "PASS"]
    assert outcome.best.id == outcome.candidates[1].id and outcome.rounds == 2
    assert outcome.reason == "the agent has nothing more to propose"
    first, second = proposals(tmp_path)
    assert "The version to repair (it fails)" in first["prompt"] and "shape" in first["prompt"]
    assert f"## Last failures\n\nrun {outcome.candidates[0].id}: FAIL" in second["prompt"]
    gave_up = optimize(store, TINY, replayed, failing, rules=Rules(repair_turns=0))
    assert gave_up.reason.startswith("the starting version does not pass") and gave_up.candidates == []


def test_parallel_candidates_climb_at_once(tmp_path):
    """Two conversations at once; their versions climb together on two CPU workers, each with its
    own tokens, dollars and seconds in the ledger."""
    with RecordedEndpoint([[answer(ADD, "add")], [answer(SCALED, "float scale")]]) as endpoint:
        outcome = optimize(
            Store(tmp_path), TINY, agent(endpoint, tmp_path, "openai"), GOOD, Budget(rounds=1), parallel=2
        )
    runs = sorted(outcome.candidates, key=lambda r: r.id)
    assert [r.verdict for r in runs] == ["PASS", "PASS"]
    assert {r.environment["executor"] for r in runs} == {"local cpu 0", "local cpu 1"}
    a, b = runs
    assert a.started < b.finished and b.started < a.finished  # the climbs overlapped
    rows = proposals(tmp_path)
    assert len(rows) == 2
    for row in rows:
        assert row["tokens_in"] == 1200 and row["cost_usd"] == pytest.approx((1200 * 3 + 300 * 15) / 1e6)
        assert row["agent_s"] > 0 and row["ladder_s"] > 0
    parents = {r.solution.parent for r in runs}
    assert parents == {Store(tmp_path).run(1).solution.sha256}


def test_a_hint_and_a_pause_arriving_mid_run(tmp_path):
    """After round 1 a person adds a hint (and pauses the loop for a second), as `rung hint` does
    from another terminal: round 2's conversation is sent the hint, and its version is recorded
    with it."""
    events: list[dict] = []

    steering = Steering(tmp_path, "tiny")  # what `rung hint` writes (tests/test_hint_cli.py)

    def person(event: dict) -> None:
        events.append(event)
        if event["event"] == "round" and event["round"] == 1:
            steering.add_hint("try adding x to itself")
            steering.pause()
            threading.Timer(1.0, steering.resume).start()

    with RecordedEndpoint([[answer(SCALED, "float scale")], [answer(ADD, "add")]]) as endpoint:
        began = time.monotonic()
        outcome = optimize(
            Store(tmp_path), TINY, agent(endpoint, tmp_path), GOOD, Budget(rounds=2), on_event=person
        )
        sent = [json.dumps(r) for r in endpoint.requests]
    assert "try adding x to itself" not in sent[0] and "try adding x to itself" in sent[1]
    kinds = [e["event"] for e in events]
    assert kinds.index("paused") < kinds.index("resumed") < kinds.index("hint") < len(kinds)
    assert outcome.spent.paused_s >= 1.0 and outcome.spent.wall_s < time.monotonic() - began
    first, second = proposals(tmp_path)
    assert json.loads(first["hints"]) == [] and json.loads(second["hints"]) == ["try adding x to itself"]


def test_a_pinned_language_shapes_the_prompt_and_refuses_others(tmp_path):
    with RecordedEndpoint([[answer(ADD, "plain torch")]]) as endpoint:
        outcome = optimize(
            Store(tmp_path),
            TINY,
            agent(endpoint, tmp_path),
            GOOD,
            Budget(rounds=1),
            rules=Rules(backend="triton"),
        )
        sent = json.dumps(endpoint.requests[0])
    assert outcome.failures == ["written in torch, but the person pinned triton"] and outcome.candidates == []
    assert "Write in triton (pinned by the person)" in sent
    assert idioms.check_pin("triton") == "triton"
    with pytest.raises(UsageError, match="not a kernel language rung knows"):
        idioms.check_pin("fortran")
    assert idioms.written_in("import triton\ndef custom_kernel(x): ...") == "triton"
    assert idioms.written_in("def custom_kernel(x): return x") == "torch"
    assert idioms.section("triton").startswith("Write in triton (pinned by the person). Triton:")
    assert "triton" in idioms.installed() and "torch" in idioms.installed()
    assert "Languages installed here" in idioms.section("")
    assert "tools are offered" in prompt.SYSTEM
