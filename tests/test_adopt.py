"""A judge started to describe a problem climbs the first solution after it (`adopt`): the verdict
is the one a fresh judge gives, no second judge starts, its log goes with the run, and a judge
that already holds a solution never takes another; ceilings not yet known are measured by it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rung import runner
from rung.common.child import Child
from rung.common.messages import JudgeHello
from rung.store import Store
from tests.conftest import FIXTURES

TINY = FIXTURES / "tiny"


def test_the_describing_judge_climbs_the_solution_with_a_fresh_judges_verdicts(tmp_path, monkeypatch):
    launched: list[str] = []
    launch = Child.launch

    def counted(self: Child, *args: Any, **kwargs: Any) -> None:
        launched.append(self.module)
        launch(self, *args, **kwargs)

    monkeypatch.setattr(Child, "launch", counted)
    with Store(tmp_path / "ws") as store:
        problem, device, judge = runner.describe_keeping(TINY, store.root / "scratch")
        assert launched == ["rung.judge.main"]
        adopted = runner.climb(store, problem, device, TINY / "solutions" / "good.py", judge=judge)
        assert launched == ["rung.judge.main"]  # the climb started no judge of its own
        assert not judge.child.alive  # closed with the climb
        fresh = runner.climb(store, problem, device, TINY / "solutions" / "good.py")
        problem, device, again = runner.describe_keeping(TINY, store.root / "scratch")
        wrong = runner.climb(store, problem, device, TINY / "solutions" / "wrong_shape.py", judge=again)
        assert launched.count("rung.judge.main") == 3  # the fresh climb's, the second describe's
        assert adopted.verdict == fresh.verdict == "PASS"
        assert {r.name: r.status for r in adopted.rungs} == {r.name: r.status for r in fresh.rungs}
        assert wrong.verdict.startswith("FAIL")  # an adopted judge still fails what is wrong
        assert (store.run_dir(adopted.id) / "logs" / "judge.stderr.log").is_file()


def test_a_judge_holding_a_solution_refuses_another_and_the_next_call_starts_afresh(tmp_path):
    with Store(tmp_path / "ws") as store:
        *_, judge = runner.describe_keeping(TINY, store.root / "scratch")
        first = runner._hello(TINY, TINY / "solutions" / "good.py", "x = 1\n", tmp_path / "run1", 1)
        judge.adopt(first, tmp_path / "run1" / "logs")
        assert judge.child.alive
        second = runner._hello(TINY, TINY / "solutions" / "raises.py", "y = 2\n", tmp_path / "run2", 2)
        judge.adopt(second, tmp_path / "run2" / "logs")
        assert not judge.child.alive  # it refused (and ended); nothing of the first solution stays
        assert judge.hello is second and judge.log_dir == Path(tmp_path / "run2" / "logs")
        judge.close()


def test_the_hello_crosses_as_sent_and_a_malformed_one_is_refused(tmp_path):
    hello = runner._hello(TINY, TINY / "solutions" / "good.py", "x = 1\n", tmp_path / "run", 7)
    sent = hello.to_dict()
    assert JudgeHello.from_dict(sent) == hello
    with pytest.raises(ValueError, match=r"unknown keys \['extra'\] and missing keys \[\]"):
        JudgeHello.from_dict({**sent, "extra": 1})
    with pytest.raises(ValueError, match=r"missing keys \['seed'\]"):
        JudgeHello.from_dict({k: v for k, v in sent.items() if k != "seed"})
    for key, bad in (("seed", "7"), ("seed", True), ("confine", 1), ("source", 3), ("problem", None)):
        with pytest.raises(ValueError, match=f"whose {key} is not of its type"):
            JudgeHello.from_dict({**sent, key: bad})


def test_an_unused_describing_judge_is_closed_by_a_climb_that_never_begins(tmp_path, monkeypatch):
    monkeypatch.setenv("RUNG_SKIP", "no_such_rung")
    with Store(tmp_path / "ws") as store:
        problem, device, judge = runner.describe_keeping(TINY, store.root / "scratch")
        try:
            runner.climb(store, problem, device, TINY / "solutions" / "good.py", judge=judge)
        except Exception as e:
            assert "no_such_rung" in str(e)
        else:
            raise AssertionError("a bad RUNG_SKIP must stop the climb")
        assert not judge.child.alive
        assert not judge.log_dir.exists()  # its folder in scratch went with it


def test_ceilings_not_yet_known_are_measured_by_the_describing_judge(tmp_path, monkeypatch):
    from rung.spec import Device

    asked: list[str] = []

    class Judge:
        def call(self, op: str, params: dict, timeout_s: float) -> dict:
            asked.append(op)
            return {"ceilings": {"dram_gbps": 1.0}}

    def no_second_judge(*args: Any) -> None:
        raise AssertionError("a judge was started for the ceilings alone")

    monkeypatch.setattr(runner.devices, "cached", lambda device: None)
    monkeypatch.setattr(runner.devices, "remember", lambda device, ceilings: None)
    monkeypatch.setattr(runner, "_ask", no_second_judge)
    gpu = Device("cuda", "NVIDIA H200", "sm_90")
    assert runner.device_ceilings(gpu, tmp_path, judge=Judge()) == {"dram_gbps": 1.0}  # type: ignore[arg-type]
    assert asked == ["ceilings"]
