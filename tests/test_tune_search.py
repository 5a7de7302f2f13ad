"""The tune agent's search (Optuna) without a ladder: each proposed version gets a made-up time."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

from rung.agents import LoopState, Tried
from rung.agents.tune import TuneAgent

SOURCE = """import torch

A = 0
B = 0
TUNE = {"A": list(range(10)), "B": list(range(10))}


def custom_kernel(x):
    return x + A + B
"""
SOURCE = SOURCE.replace("list(range(10))", repr(list(range(10))))


@dataclass
class FakeRun:
    ms: float | None  # None: the version failed a rung


def values(source: str) -> tuple[int, int]:
    tree = ast.parse(source)
    found = {n.targets[0].id: ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign)}
    return found["A"], found["B"]


def bowl(source: str) -> float:
    """A made-up time with its minimum at A=7, B=2."""
    a, b = values(source)
    return 1.0 + (a - 7) ** 2 + (b - 2) ** 2


@pytest.fixture(autouse=True)
def fake_score(monkeypatch):
    monkeypatch.setattr("rung.optimize.score", lambda run: None if run.ms is None else (run.ms, 0.0))


def climb(agent: TuneAgent, rounds: int, k: int, start: str = SOURCE, time=bowl) -> list[str]:
    state = LoopState(problem=None, device=None, best=Tried(FakeRun(time(start)), start))  # type: ignore[arg-type]
    proposed = []
    for _ in range(rounds):
        batch = agent.propose(state, k)
        if not batch:
            break
        for p in batch:
            proposed.append(p.source)
            tried = Tried(FakeRun(time(p.source)), p.source)  # type: ignore[arg-type]
            state.tried.append(tried)
            if tried.run.ms is not None and (state.best.run.ms is None or tried.run.ms < state.best.run.ms):
                state.best = tried
    agent.propose(state, 0)  # the last round's times told
    return proposed


def test_tpe_finds_the_minimum_of_a_space_larger_than_its_budget_without_repeats():
    agent = TuneAgent(SOURCE, budget=40, seed=7)
    assert agent.sampler_name == "TPE"  # 100 combinations > 40
    proposed = climb(agent, rounds=10, k=4)
    combos = [values(s) for s in proposed]
    assert len(combos) == 40 and len(set(combos)) == 40 and (0, 0) not in combos  # (0, 0) is the start
    best = min(bowl(s) for s in proposed)
    # Random sampling of 40 of 100 misses the 5 points within distance 1 of the minimum about
    # 11% of the time; TPE with this seed lands on it.
    assert best <= 2.0, sorted(combos, key=lambda c: (c[0] - 7) ** 2 + (c[1] - 2) ** 2)[:3]


def test_a_space_within_budget_is_a_grid_tried_once_each():
    small = SOURCE.replace(repr(list(range(10))), "[0, 1, 2]")
    agent = TuneAgent(small, budget=16, seed=1)
    assert agent.sampler_name == "grid"
    proposed = climb(agent, rounds=10, k=4, start=small)
    assert sorted(values(s) for s in proposed) == [
        (a, b) for a in range(3) for b in range(3) if (a, b) != (0, 0)
    ]


def test_a_failed_version_is_a_failed_trial_and_never_proposed_again():
    def fails_where_a_is_odd(source: str) -> float | None:
        return None if values(source)[0] % 2 else bowl(source)

    agent = TuneAgent(SOURCE, budget=30, seed=3)
    proposed = climb(agent, rounds=6, k=5, time=fails_where_a_is_odd)
    failed = [t for t in agent.study.trials if t.state.name == "FAIL"]
    assert failed and all(ast.literal_eval(t.params["A"]) % 2 for t in failed)
    assert len({values(s) for s in proposed}) == len(proposed)


def test_from_a_variant_resumes_the_study_instead_of_climbing_again(tmp_path: Path):
    first = TuneAgent(SOURCE, budget=40, study_dir=tmp_path, seed=11)
    earlier = climb(first, rounds=3, k=4)
    best = min(earlier, key=bowl)
    again = TuneAgent(best, budget=40, study_dir=tmp_path, seed=12)  # --from the best variant
    assert again.study.study_name == first.study.study_name
    assert len([t for t in again.study.trials if t.state.name == "COMPLETE"]) >= 12  # the start and 12 timed
    later = climb(again, rounds=3, k=4, start=best)
    assert not {values(s) for s in later} & {values(s) for s in [*earlier, SOURCE]}


def test_each_run_draws_its_own_seed_and_names_it():
    seeds = {TuneAgent(SOURCE, budget=40).seed for _ in range(4)}
    assert len(seeds) > 1
    agent = TuneAgent(SOURCE, budget=40)
    state = LoopState(problem=None, device=None, best=Tried(FakeRun(bowl(SOURCE)), SOURCE))  # type: ignore[arg-type]
    assert all(f"seed {agent.seed}" in p.note for p in agent.propose(state, 2))
