"""The judge's CUDA start-up in a thread while its solution process starts (rung.judge.cuda_warmup):
started only where asked, harmless where CUDA is absent, and over before any rung but load runs."""

from __future__ import annotations

from types import SimpleNamespace

from rung.judge import main
from rung.judge.cuda_warmup import CudaWarmup
from rung.judge.rungs import WORKER_RUNGS
from rung.spec import RungResult, Status


def test_off_starts_nothing_and_on_ends_even_without_a_gpu():
    off = CudaWarmup(False)
    assert not off.started
    off.wait()
    on = CudaWarmup(True)  # no GPU here: the start-up fails inside its thread, silently
    assert on.started
    on.wait()
    assert not on._thread.is_alive()


def test_every_rung_but_load_waits_for_the_start_up(monkeypatch):
    order: list[str] = []

    class Recorder:
        def wait(self) -> None:
            order.append("waited")

    def rung(name: str):
        def body(session, params):
            order.append(name)
            return RungResult(name, Status.OK, "")

        return body

    for name in ("load", "run", "bench"):
        monkeypatch.setitem(WORKER_RUNGS, name, rung(name))
    session = SimpleNamespace(warnings={}, warmup=Recorder())
    for op in ("load", "run", "bench"):
        assert main.handle(session, op, {})["status"] == "OK"
    # load overlaps the start-up (it waits on the solution process); run and bench never do
    assert order == ["load", "waited", "run", "waited", "bench"]
