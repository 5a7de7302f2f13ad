"""Nothing from the solution's side is believed: interpreters start isolated, shared buffers are
sealed memfds with a poisoned band past each, and every answer is bounded. Each planted solution
fails for its own reason (or, where it raises if its attack worked, passes), the store still
reads, and nothing is written outside the run's own folder."""

from __future__ import annotations

import contextlib
import fcntl
import json
import mmap
import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest
import torch

from rung.common import confine
from rung.common.channel import Channel, MessageTooLarge
from rung.common.child import describe_exit
from rung.common.logcap import bounded
from rung.common.shm import POISON_BYTES, BufferRefused, Exporter, TensorSpec, mapped_bytes, open_buffer
from rung.spec import Status
from tests.conftest import FIXTURES, rung_of, workspace_files, written_outside_its_run

TINY = FIXTURES / "tiny"
PLANTED = FIXTURES / "isolation"


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] not in "ZX"  # a zombie waits for a subreaper, but runs nothing


def _shm() -> set[str]:
    return {p.name for p in Path("/dev/shm").glob("rung-*")}


@pytest.mark.parametrize(
    ("solution", "rung", "status", "says"),
    [
        ("plants_packages.py", "guard", Status.ERROR, "exited with code 5"),
        pytest.param(
            "reads_past_input.py",
            "run",
            Status.FAILED,
            "non-finite elements where the reference is finite",
            marks=pytest.mark.skipif(
                torch.cuda.is_available(), reason="the band is the CPU's; it reads a host pointer"
            ),
        ),
        ("huge_message.py", "run", Status.ERROR, "sent a message of more than 32 MiB"),
        ("truncates_input.py", None, None, ""),  # raises if it shrank anything: passes
    ],
)
def test_a_planted_solution_fails_for_its_reason_and_writes_nothing_outside_its_run(
    climb, solution, rung, status, says
):
    before, shm = workspace_files(climb), _shm()
    run = climb(TINY, PLANTED / solution)
    bad = [(r.name, r.status, r.message[:300]) for r in run.rungs if r.status.bad]
    if rung is None:
        assert run.ok, bad
    else:
        r = rung_of(run, rung)
        assert r.status == status and says in r.message, bad
        assert not run.ok
    outside = written_outside_its_run(climb, before, run)
    assert not outside, outside
    assert climb.store.run(run.id).ok == run.ok  # the store still reads, with this run in it
    assert len(json.dumps(run.to_dict(), default=str)) < 300_000
    assert _shm() <= shm  # no shared-memory folder left behind
    assert not list(TINY.rglob("__pycache__"))  # the judge imported the problem writing no bytecode


def test_a_module_from_a_writable_folder_is_refused_before_confinement(tmp_path, monkeypatch):
    (tmp_path / "planted_mod.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "planted_mod", raising=False)
    import planted_mod  # noqa: F401

    with pytest.raises(ImportError, match=r"planted_mod from .*planted_mod\.py"):
        confine.check_imports([tmp_path])
    confine.check_imports([tmp_path / "elsewhere"])


def test_a_cpu_buffer_is_a_sealed_memfd_with_a_poisoned_band():
    exporter = Exporter()
    spec = TensorSpec((5,), "float32", "cpu")
    key, handle = exporter.allocate(spec)
    mine = exporter.buffers[key]
    assert mine.shape == (5,) and mine.untyped_storage().nbytes() == 20  # the band is past its storage
    with pytest.raises(PermissionError):
        os.ftruncate(handle["fd"], 0)
    with pytest.raises(RuntimeError):
        mine.untyped_storage().resize_(0)
    judges = open_buffer(spec, handle, os.getpid())
    judges.copy_(torch.arange(5.0))
    assert torch.equal(mine, torch.arange(5.0))
    with open(f"/proc/self/fd/{handle['fd']}", "rb") as f:
        band = f.read()[20:]
    assert len(band) == mapped_bytes(20) - 20 >= POISON_BYTES
    assert torch.frombuffer(bytearray(band[:64]), dtype=torch.float32).isnan().all()
    exporter.forget_handles()
    exporter.free(key)


@pytest.mark.parametrize("kind", ["unsealed memfd", "regular file", "pipe", "wrong size"])
def test_the_judge_refuses_a_handle_that_is_not_a_sealed_buffer(tmp_path, kind):
    spec = TensorSpec((5,), "float32", "cpu")
    if kind == "pipe":
        fd = os.pipe()[0]
    elif kind == "regular file":
        fd = os.open(tmp_path / "f", os.O_RDWR | os.O_CREAT)
        os.ftruncate(fd, mapped_bytes(20))
    else:
        fd = os.memfd_create("x", os.MFD_ALLOW_SEALING)
        os.ftruncate(fd, mapped_bytes(20) + (mmap.PAGESIZE if kind == "wrong size" else 0))
        if kind == "wrong size":
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
    try:
        with pytest.raises(BufferRefused):
            open_buffer(spec, {"kind": "cpu", "fd": fd}, os.getpid())
    finally:
        os.close(fd)


def test_a_message_past_the_cap_is_refused_and_strings_keep_head_and_tail():
    r, w = os.pipe()

    def write() -> None:
        with contextlib.suppress(BrokenPipeError):
            os.write(w, b'{"a": "' + b"x" * (2 << 20))

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    with pytest.raises(MessageTooLarge):
        Channel(r, -1, max_bytes=1 << 20).recv(timeout_s=10)
    os.close(r)  # the writer's write ends (EPIPE) once no reader is left
    writer.join(10)
    os.close(w)
    cut = bounded({"error": "a" * 100 + "b" * 100, "n": [1, {"k" * 300: "ok"}]}, 40)
    assert cut["error"].startswith("a" * 20) and cut["error"].endswith("b" * 20)
    assert "160 chars cut" in cut["error"] and cut["n"][0] == 1
    deep: list = []
    for _ in range(100):
        deep = [deep]
    assert "nested deeper" in json.dumps(bounded(deep, 40))


def test_a_judge_killed_mid_check_leaves_no_process_and_no_shared_memory(tmp_path):
    from rung.common.messages import JudgeHello
    from rung.judge_process import Judge

    run_dir = tmp_path / "run"
    source = (TINY / "solutions" / "good.py").read_text()
    hello = {"problem": str(TINY), "source": source, "solution_name": "good.py", "run_dir": str(run_dir),
             "seed": 1, "confine": True, "cwd": str(TINY)}  # fmt: skip
    shm = _shm()
    judge = Judge(JudgeHello(**hello), run_dir / "logs")
    try:
        assert judge.call("run", {"timeout_s": 120}, 300)["status"] == "OK"  # buffers were made
        assert judge.child.proc is not None
        judge_pid = judge.child.proc.pid
        below = confine.descendants(judge_pid)
        assert below  # its solution process
        os.kill(judge_pid, 9)
        judge.child.proc.wait()
    finally:
        judge.child.kill()
    for _ in range(100):
        if not any(map(_alive, below)):
            break
        time.sleep(0.05)
    assert not any(map(_alive, below))
    assert _shm() <= shm
    assert "shrank under it: the solution's doing" in describe_exit(-signal.SIGBUS, "judge")


def test_the_solution_writes_no_cache_the_judge_loads_from(tmp_path, monkeypatch):
    """The judge's torch.compile baseline loads the launchers Triton caches (native code): the
    solution's compiler caches are its own, never the judge's Triton or CUDA cache."""
    from rung.common.messages import JudgeHello
    from rung.judge.start import solution_start
    from rung.solution.main import writable_paths

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "judge-triton"))
    monkeypatch.setenv("RUNG_CACHE_DIR", str(tmp_path / "rung-cache"))
    source = tmp_path / "solution.py"
    source.write_text("def custom_kernel(x):\n    return x\n")
    start, env = solution_start(JudgeHello(problem="", run_dir=str(tmp_path / "run")), source, True)
    judges = [tmp_path / "judge-triton", Path.home() / ".triton", Path.home() / ".nv"]
    writable = [Path(p).resolve() for p in writable_paths(start)]
    assert not [w for w in writable for j in judges if w.is_relative_to(j.resolve())], writable
    assert env["TRITON_CACHE_DIR"] != os.environ["TRITON_CACHE_DIR"]
    assert Path(env["CUDA_CACHE_PATH"]).is_relative_to(tmp_path / "rung-cache")
