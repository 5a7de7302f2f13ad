"""The optimize loop profiles the versions it chooses (rung.chosen), not every candidate."""

from __future__ import annotations

import json

from rung import chosen, knobs, runner
from rung.agents.replay import ConversationReplay
from rung.optimize import Budget, optimize
from rung.spec import Status
from rung.store import Store
from tests.conftest import FIXTURES
from tests.test_agent_loop import ADD, SCALED, WRONG_SHAPE, answer, proposals

TINY = FIXTURES / "tiny"


def test_a_profile_climb_stands_on_the_rungs_profile_needs():
    assert chosen.standing_on(("profile",)) == ("load", "run", "correct", "scale", "profile")
    assert chosen.standing_on(("compile", "scopes"))[-1] == "scopes"


def test_candidates_leave_out_the_deferred_rungs_beside_the_persons():
    with knobs.scoped(RUNG_SKIP="trace"), chosen.candidates_deferred():
        assert runner.skipped_rungs() == {"trace", "profile", "scopes"}
    assert knobs.get("RUNG_SKIP") != "trace,profile,scopes"


def test_no_profile_climb_without_a_gpu_or_when_left_out(tmp_path):
    store = Store(tmp_path)
    _, device = runner.describe(TINY, store.root / "scratch")
    assert device.kind != "cuda" and chosen.wanted(device) == ()
    gpu = device.__class__(**{**device.__dict__, "kind": "cuda"})
    assert chosen.wanted(gpu) == ("profile",)  # scopes only when asked
    with knobs.scoped(RUNG_SCOPES="1"):
        assert chosen.wanted(gpu) == ("profile", "scopes")
    with knobs.scoped(RUNG_SKIP="profile"):
        assert chosen.wanted(gpu) == ()


def test_the_new_best_is_profiled_once_and_shown_to_the_agent(tmp_path, monkeypatch):
    """As on a GPU (wanted() says profile is due): the candidates climb with profile left out;
    the version that becomes the best gets one profile climb of its own, and the next round's
    prompt points at it. Here the profile rung itself is SKIPPED (no CUDA device), but the climb,
    its rungs and its lineage are the ones a GPU would see."""
    monkeypatch.setattr(chosen, "wanted", lambda device: ("profile",))
    store = Store(tmp_path)
    problem, device = runner.describe(TINY, store.root / "scratch")
    failing = runner.climb(store, problem, device, WRONG_SHAPE)
    recording = tmp_path / "talks.json"
    talks = [[answer(ADD, "whole output")], [answer(SCALED, "float scale")]]
    recording.write_text(json.dumps({"provider": "openai", "conversations": talks}))
    events: list[dict] = []
    replayed = ConversationReplay(recording, tmp_path)
    try:
        outcome = optimize(store, TINY, replayed, failing, Budget(rounds=2), on_event=events.append)
    finally:
        replayed.close()
    repaired, other = outcome.candidates
    for run in (repaired, other):
        profile = {r.name: r for r in run.rungs}["profile"]
        assert (profile.status, profile.message) == (Status.SKIPPED, "left out (RUNG_SKIP)")
    profiled = [e for e in events if e["event"] == "profiled"]
    assert [e["run"] for e in profiled] == [repaired.id]  # once: the second round found no gain
    climb = store.run(profiled[0]["profile_run"])
    assert (climb.solution.sha256, climb.solution.parent) == (
        repaired.solution.sha256,
        repaired.solution.parent,
    )
    ran = [r.name for r in climb.rungs if not r.message.startswith("left out")]
    assert ran == ["load", "compile", "run", "correct", "scale", "profile"]
    assert f"profiled as run {climb.id}" in proposals(tmp_path)[1]["prompt"]
