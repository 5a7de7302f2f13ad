"""The fork server: solution processes forked from a trusted process that imported torch once.

A check through it passes an honest solution and records how its solution process started; a
child sees nothing an earlier child of the same server left (files, memory, environment); the
server holds no secret, is single-threaded, and runs no solution code; a server that dies is
restarted, and past its restarts the solution process starts afresh, the record saying so.

The judge's side runs in this test process (a `Session`, as the judge holds one), so that two
candidates are forked from one server as a judge's would be across checks.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest
import torch

from rung.common.child import ChildCrashed
from rung.judge import fork_server
from rung.spec import Status
from tests.conftest import FIXTURES, ROOT, rung_of

pytestmark = pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="the fork server needs pidfd_open")

TINY = FIXTURES / "tiny"

LEAVES = """
import os, sys, torch
os.environ["RUNG_LEAK_MARK"] = "left"
torch._rung_leak_mark = "left"
sys.modules["rung_leak_mark"] = type(sys)("rung_leak_mark")
with open("leak_mark.txt", "w") as f:
    f.write(str(os.getpid()) + " " + str(os.getppid()))
"""

LOOKS = """
import os, sys, tempfile, torch
found = []
if "RUNG_LEAK_MARK" in os.environ: found.append("environment")
if hasattr(torch, "_rung_leak_mark"): found.append("module global")
if "rung_leak_mark" in sys.modules: found.append("sys.modules")
if os.path.exists("leak_mark.txt"): found.append("its own scratch")
try:
    open({earlier!r}).read()
    found.append("the earlier scratch")
except OSError:
    pass
if tempfile.gettempdir() != os.environ["TMPDIR"]: found.append("temp folder " + tempfile.gettempdir())
if found:
    raise RuntimeError("an earlier child's: " + ", ".join(found))
"""

KERNEL = "\ndef custom_kernel(x):\n    return x * 2\n"


@pytest.fixture
def server(monkeypatch):
    """A server of this test's own, as `fork_server.shared()` (one per judge) returns it."""
    own = fork_server.ForkServer()
    monkeypatch.setattr(fork_server, "_shared", own)
    yield own
    own.close()


def _session(tmp_path: Path, name: str, source: str):
    from rung.common.messages import JudgeHello
    from rung.judge.session import Session

    run_dir = tmp_path / name
    run_dir.mkdir()
    hello = {
        "problem": str(TINY),
        "run_dir": str(run_dir),
        "seed": 1,
        "source": source,
        "solution_name": "s.py",
    }
    return Session(JudgeHello(**hello))


def _load(session):
    from rung.judge.rungs.load import load

    return load(session, {})


def _environ(pid: int) -> str:
    return Path(f"/proc/{pid}/environ").read_bytes().decode(errors="replace")


def test_a_check_through_the_fork_server_passes_and_records_how_it_started(climb):
    run = climb(TINY, TINY / "solutions" / "good.py")
    assert run.ok, [(r.name, r.message) for r in run.rungs if r.status.bad]
    assert rung_of(run, "load").metrics["confinement"]["start"] == "fork server"


def test_with_the_knob_off_the_record_says_fresh_interpreter(climb, monkeypatch):
    monkeypatch.setenv("RUNG_FORK_SERVER", "0")
    run = climb(TINY, TINY / "solutions" / "good.py")
    assert run.ok
    assert rung_of(run, "load").metrics["confinement"]["start"] == "fresh interpreter (RUNG_FORK_SERVER=0)"


def test_a_child_sees_nothing_an_earlier_child_left(server, tmp_path):
    first = _session(tmp_path, "first", LEAVES + KERNEL)
    loaded = _load(first)
    assert loaded.status == Status.OK and loaded.metrics["confinement"]["start"] == "fork server"
    mark = Path(first.run_dir) / "solution" / "leak_mark.txt"
    child, parent = (int(n) for n in mark.read_text().split())
    assert parent == server.pid and child != server.pid  # forked by the server, not run in it
    assert "RUNG_LEAK_MARK" not in _environ(server.pid)

    later = _session(tmp_path, "later", LOOKS.format(earlier=str(mark)) + KERNEL)
    result = _load(later)
    assert result.status == Status.OK, result.message
    assert later.solution.pid != child and server.pid == parent  # the same server, a new child
    for session in (first, later):
        session.solution.close()


def test_the_look_for_an_earlier_childs_traces_finds_them_where_they_are(server, tmp_path):
    # The same marks left and looked for in one process: the look finds every one, so its
    # passing above means the later child had none.
    mark = tmp_path / "same" / "solution" / "leak_mark.txt"
    same = _session(tmp_path, "same", LEAVES + LOOKS.format(earlier=str(mark)) + KERNEL)
    result = _load(same)
    assert result.status.bad
    for where in ("environment", "module global", "sys.modules", "its own scratch", "the earlier scratch"):
        assert where in result.message
    same.solution.close()


def test_the_server_holds_no_secret_and_is_single_threaded(server, tmp_path, monkeypatch):
    planted = {"OPENAI_API_KEY": "sk-planted-1", "HF_TOKEN": "hf-planted-2", "CUDA_API_TOKEN": "planted-3"}
    for name, value in planted.items():
        monkeypatch.setenv(name, value)
    session = _session(tmp_path, "secrets", "import os\n" + KERNEL)
    assert _load(session).status == Status.OK
    environ = _environ(server.pid)
    assert "PATH=" in environ  # it was read
    assert not [name for name, value in planted.items() if name in environ or value in environ]
    assert os.listdir(f"/proc/{server.pid}/task") == [str(server.pid)]
    session.solution.close()


def test_a_forked_child_runs_the_library_threads_a_fresh_one_does(server, tmp_path, monkeypatch):
    # The judge counts them before the import: one a library started later (numpy's OpenBLAS pool,
    # which the fork stopped) would be taken for the solution's (guard's no_stray_threads).
    counts = {}
    for knob in ("1", "0"):
        monkeypatch.setenv("RUNG_FORK_SERVER", knob)
        session = _session(tmp_path, f"threads{knob}", "import os\n" + KERNEL)
        session.ready_to_import()
        counts[knob] = sorted(session.threads.baseline.values())
        session.solution.close()
    assert counts["1"] == counts["0"] and len(counts["1"]) > 1


def test_the_server_refuses_to_fork_beside_another_thread():
    from rung.solution.forked import _single_threaded

    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert "threads" in _single_threaded()
    finally:
        stop.set()
        other.join()


def test_the_server_refuses_to_serve_once_cuda_is_initialised_in_it(monkeypatch):
    import torch

    from rung.solution.forked import _prepare

    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    assert "CUDA was initialised in the fork server" in _prepare()  # before it forks anything


def test_a_killed_server_is_restarted_then_given_up_on_and_the_record_says_so(server, tmp_path, monkeypatch):
    session = _session(tmp_path, "killed", "import os\n" + KERNEL)
    assert _load(session).metrics["confinement"]["start"] == "fork server"
    first = server.pid
    assert first is not None
    # Killed while a child imports its solution: that child dies with it, and says so.
    slow = _session(tmp_path, "slow", "import time\ntime.sleep(30)\n" + KERNEL)
    killer = threading.Timer(1.0, os.kill, (first, signal.SIGKILL))
    killer.start()
    with pytest.raises(
        ChildCrashed, match=r"the fork server ended \(it ended with code -9\), and the solution"
    ):
        _load(slow)
    killer.join()
    for _ in range(600):  # its other child dies too, as fast as the kernel tears it down
        if not session.solution.child.alive:
            break
        time.sleep(0.05)
    # The next start restarts it, and the record says so.
    again = _load(session)
    assert again.status == Status.OK, again.message
    assert again.metrics["confinement"]["start"].startswith("fork server (restarted: it ended with code -9")
    assert server.pid not in (None, first)
    # Past its restarts, solution processes start afresh, saying why.
    monkeypatch.setattr(fork_server, "MAX_RESTARTS", 1)
    os.kill(server.pid, signal.SIGKILL)
    session.solution.close()
    fresh = _load(session)
    assert fresh.status == Status.OK, fresh.message
    assert fresh.metrics["confinement"]["start"].startswith("fresh interpreter (fork server: it died 2 times")
    session.solution.close()


def test_where_the_platform_cannot_fork_safely_the_start_is_fresh_and_says_why(server, tmp_path, monkeypatch):
    monkeypatch.delattr(os, "pidfd_open")
    session = _session(tmp_path, "platform", "import os\n" + KERNEL)
    loaded = _load(session)
    assert loaded.status == Status.OK, loaded.message
    assert (
        loaded.metrics["confinement"]["start"]
        == "fresh interpreter (fork server: no pidfd_open or SCM_RIGHTS on this platform)"
    )
    assert server.pid is None  # none was started
    session.solution.close()


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_on_a_gpu_a_forked_child_starts_cuda_and_passes(climb):
    # The server never starts CUDA (a driver started before a fork is unusable in the child): each
    # child starts its own after the fork, and a Triton kernel compiles, runs and is timed there.
    problem = ROOT / "problems" / "vector_add"
    run = climb(problem, problem / "solutions" / "correct" / "tuned.py")
    assert run.ok, [(r.name, r.message) for r in run.rungs if r.status.bad]
    load = rung_of(run, "load")
    assert load.metrics["confinement"]["start"] == "fork server" and load.metrics["device"] == "cuda"
    assert rung_of(run, "bench").status == Status.OK
