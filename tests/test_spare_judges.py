"""Judges started ahead of their climbs (`SpareJudges`): the optimize loop's every climb adopts one
that started while it waited, none started under other settings is adopted, none outlives the
loop, and the verdicts are a fresh judge's."""

from __future__ import annotations

from typing import Any

from rung import runner
from rung.agents.replay import ReplayAgent
from rung.common.child import Child
from rung.common.messages import JudgeHello
from rung.judge_process import Judge
from rung.optimize import Budget, optimize
from rung.spare_judges import SpareJudges
from rung.store import Store
from tests.conftest import FIXTURES

TINY = FIXTURES / "tiny"


def _count(monkeypatch) -> tuple[list[str], list[str]]:
    """The modules launched and the solutions adopted, as they happen."""
    launched: list[str] = []
    adopted: list[str] = []
    launch, adopt = Child.launch, Judge.adopt

    def counted_launch(self: Child, *args: Any, **kwargs: Any) -> None:
        launched.append(self.module)
        launch(self, *args, **kwargs)

    def counted_adopt(self: Judge, hello: JudgeHello, *args: Any, **kwargs: Any) -> None:
        adopted.append(hello.solution_name)
        adopt(self, hello, *args, **kwargs)

    monkeypatch.setattr(Child, "launch", counted_launch)
    monkeypatch.setattr(Judge, "adopt", counted_adopt)
    return launched, adopted


def test_every_climb_of_the_loop_adopts_a_judge_started_while_it_waited(tmp_path, monkeypatch):
    launched, adopted = _count(monkeypatch)
    agent = ReplayAgent([TINY / "solutions" / "wrong_shape.py", TINY / "solutions" / "returns_none.py"])
    with Store(tmp_path / "ws") as store:
        outcome = optimize(store, TINY, agent, start=TINY / "solutions" / "good.py", budget=Budget(rounds=5))
        scratch = store.root / "scratch"
        assert not [p for p in scratch.iterdir() if p.name.startswith("judge-")]  # none left behind
    assert len(adopted) == 3 and adopted[0] == "good.py"  # the start, then both candidates (by hash)
    judges = launched.count("rung.judge.main")
    assert judges == len(adopted) + 1  # the one readied for a third candidate that never came
    assert outcome.best.verdict == "PASS"
    verdicts = [r.verdict for r in outcome.candidates]
    assert verdicts[0].startswith("FAIL") and verdicts[1] == "FAIL at run"  # still failed, for their reasons


def test_a_spare_started_under_other_settings_is_not_adopted(tmp_path, monkeypatch):
    spares = SpareJudges(tmp_path / "scratch")
    spares.ready(TINY)
    (folder,) = (tmp_path / "scratch").iterdir()
    monkeypatch.setenv("RUNG_STRICT", "1")  # a judge reads its settings from the environment it started in
    assert spares.take(TINY) is None
    assert not folder.exists()  # ended, with its folder
    spares.ready(TINY)
    judge = spares.take(TINY)
    assert judge is not None and judge.child.alive
    judge.discard()


def test_a_held_spare_ends_with_its_holder_and_a_second_is_not_started(tmp_path):
    spares = SpareJudges(tmp_path / "scratch")
    spares.ready(TINY)
    spares.ready(TINY)  # one is held for the problem already
    held = list((tmp_path / "scratch").iterdir())
    assert len(held) == 1
    judge = spares.take(TINY)
    assert judge is not None
    spares.keep(TINY, judge)
    spares.close()
    assert not judge.child.alive and not held[0].exists()
    assert spares.take(TINY) is None


def test_a_climb_adopting_a_spare_gives_a_fresh_judges_verdicts(tmp_path):
    spares = SpareJudges(tmp_path / "ws" / ".rung" / "scratch")
    with Store(tmp_path / "ws") as store:
        problem, device = runner.describe(TINY, store.root / "scratch")
        runs = {}
        for name in ("good.py", "wrong_shape.py"):
            spares.ready(TINY)
            runs[name] = runner.climb(
                store, problem, device, TINY / "solutions" / name, judge=spares.take(TINY)
            )
            fresh = runner.climb(store, problem, device, TINY / "solutions" / name)
            assert {r.name: r.status for r in runs[name].rungs} == {r.name: r.status for r in fresh.rungs}
        assert runs["good.py"].verdict == "PASS" and runs["wrong_shape.py"].verdict.startswith("FAIL")
        assert (store.run_dir(runs["good.py"].id) / "logs" / "judge.stderr.log").is_file()
    spares.close()
