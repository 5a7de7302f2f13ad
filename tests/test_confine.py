"""A confined child reads, writes, signals and reaches only what it was given; what it leaves running
is found and killed. Real processes on the real kernel, no mocks: each attack is tried once before
confine_self (it must work, or the test would prove nothing) and once after (it must fail)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import rung
from rung.common.confine import allowed_environment, landlock_abi, probe

SRC = Path(rung.__file__).resolve().parents[1]
ABI = landlock_abi()
ENV = {**allowed_environment(os.environ), "PYTHONPATH": str(SRC)}


def needs_landlock(abi: int, what: str) -> pytest.MarkDecorator:
    return pytest.mark.skipif(abi > ABI, reason=f"{what} needs Landlock ABI {abi}; this kernel offers {ABI}")


# Every child starts with this: its grant in argv[1], `confine()`, `attempt()` and `report()`.
PRELUDE = """
import json, os, signal, socket, subprocess, sys
from pathlib import Path
from rung.common.confine import confine_self
ARGS = json.loads(sys.argv[1])

def confine():
    grant = ARGS["grant"]
    paths = lambda key: [Path(p) for p in grant[key]]
    return confine_self(read=paths("read"), write=paths("write")).to_dict()

def attempt(fn):
    try:
        fn()
    except OSError as e:
        return type(e).__name__
    return "ok"

def report(**values):
    print(json.dumps(values))
"""


def python(code: str, args: dict, env: dict[str, str] | None = None) -> dict:
    """Run `code` after PRELUDE in a fresh interpreter; what it reported, as a dict."""
    proc = subprocess.run(
        [sys.executable, "-c", PRELUDE + code, json.dumps(args)],
        capture_output=True,
        text=True,
        timeout=30,
        env=env or ENV,
    )
    assert proc.returncode == 0, f"exit {proc.returncode}: {proc.stderr[-2000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture
def grant(tmp_path: Path) -> dict:
    """What a solution is given: the interpreter, rung, a problem folder to read, a scratch to write."""
    problem = tmp_path / "problem"
    problem.mkdir()
    (problem / "reference.py").write_text("REFERENCE = 1\n")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    read = [sys.prefix, sys.base_prefix, str(SRC), str(problem), str(tmp_path / "missing")]
    return {"read": read, "write": [str(scratch)], "problem": str(problem), "scratch": str(scratch)}


@needs_landlock(1, "filesystem confinement")
def test_a_confined_child_reads_only_what_it_was_given(tmp_path, grant):
    store = tmp_path / "workspace" / ".rung" / "rung.db"
    store.parent.mkdir(parents=True)
    store.write_text("every run and every key\n")
    home = Path.home().resolve()
    home_granted = any(home.is_relative_to(Path(p).resolve()) for p in grant["read"])
    got = python(
        """
store = ARGS["store"]
before = attempt(lambda: open(store).read())
confinement = confine()
report(
    before=before,
    after=attempt(lambda: open(store).read()),
    listing=attempt(lambda: os.listdir(Path(store).parent)),
    home=attempt(lambda: os.listdir(Path.home())),
    problem=open(Path(ARGS["grant"]["problem"]) / "reference.py").read(),
)
""",
        {"grant": grant, "store": str(store)},
    )
    assert got["before"] == "ok"
    assert got["after"] == "PermissionError"
    assert got["listing"] == "PermissionError"
    assert got["home"] == ("ok" if home_granted else "PermissionError")
    assert got["problem"] == "REFERENCE = 1\n"


@needs_landlock(1, "filesystem confinement")
def test_a_confined_child_writes_only_in_its_scratch(tmp_path, grant):
    got = python(
        """
import stat
grant = ARGS["grant"]
scratch, problem = Path(grant["scratch"]), Path(grant["problem"])
confinement = confine()
(scratch / "out.txt").write_text("kept")
os.makedirs(scratch / "a" / "b")
shm = Path("/dev/shm") / f"rung-test-{os.getpid()}"
report(
    scratch=(scratch / "out.txt").read_text(),
    new_in_problem=attempt(lambda: (problem / "new.py").write_text("x")),
    overwrite_reference=attempt(lambda: open(problem / "reference.py", "w")),
    append_reference=attempt(lambda: open(problem / "reference.py", "a")),
    outside=attempt(lambda: Path(ARGS["outside"]).write_text("x")),
    device_node=attempt(lambda: os.mknod(scratch / "null", 0o600 | stat.S_IFCHR, os.makedev(1, 3))),
    dev_null=attempt(lambda: open("/dev/null", "w").write("x")),
    dev_shm=attempt(lambda: (shm.write_bytes(b"x"), shm.unlink())),
)
""",
        {"grant": grant, "outside": str(tmp_path / "outside.txt")},
    )
    assert got["scratch"] == "kept"
    assert got["new_in_problem"] == "PermissionError"
    assert got["overwrite_reference"] == "PermissionError"
    assert got["append_reference"] == "PermissionError"
    assert got["outside"] == "PermissionError"
    assert got["device_node"] == "PermissionError"
    assert got["dev_null"] == "ok"
    assert got["dev_shm"] == "ok"
    assert not (tmp_path / "outside.txt").exists()
    assert (Path(grant["problem"]) / "reference.py").read_text() == "REFERENCE = 1\n"


# A parent with a secret in its environment and an abstract unix socket listening; it runs the
# child (with an allow-listed environment), then reports what the child saw, and that it lived.
PARENT = """
from rung.common.confine import allowed_environment
listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
listener.bind(ARGS["socket"])
listener.listen(8)
child_env = allowed_environment(os.environ, keep=["PYTHONPATH"])
child = subprocess.run([sys.executable, "-c", ARGS["prelude"] + ARGS["child"], sys.argv[1]],
                       capture_output=True, text=True, env=child_env, timeout=20)
assert child.returncode == 0, child.stderr
report(parent_alive=True, child_env=sorted(child_env), **json.loads(child.stdout.splitlines()[-1]))
"""


def under_a_parent(child: str, grant: dict) -> dict:
    args = {"grant": grant, "child": child, "prelude": PRELUDE, "socket": f"\0rung-test-{os.getpid()}"}
    return python(PARENT, args, env={**ENV, "MY_SECRET_THING": "hunter2"})


@needs_landlock(1, "the ptrace rule")
def test_a_confined_child_cannot_read_its_parents_environment(grant):
    got = under_a_parent(
        """
environ = f"/proc/{os.getppid()}/environ"
before = open(environ, "rb").read()
confinement = confine()
report(
    before_had_secret=b"MY_SECRET_THING=hunter2" in before,
    own_env_has_secret="MY_SECRET_THING" in os.environ,
    after=attempt(lambda: open(environ, "rb").read()),
    parent_mem=attempt(lambda: open(f"/proc/{os.getppid()}/mem", "rb")),
    own_status=attempt(lambda: open("/proc/self/status").read()),
)
""",
        grant,
    )
    assert got["before_had_secret"]
    assert not got["own_env_has_secret"]
    assert "MY_SECRET_THING" not in got["child_env"]
    assert got["after"] == "PermissionError"
    assert got["parent_mem"] == "PermissionError"
    assert got["own_status"] == "ok"


@needs_landlock(6, "signal and abstract socket scoping")
def test_a_confined_child_cannot_signal_or_connect_to_its_parent(grant):
    got = under_a_parent(
        """
def connect():
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(ARGS["socket"])
before_socket = attempt(connect)
before_signal = attempt(lambda: os.kill(os.getppid(), 0))
confinement = confine()
own = subprocess.Popen(["sleep", "30"])
report(
    before_socket=before_socket,
    before_signal=before_signal,
    sigterm=attempt(lambda: os.kill(os.getppid(), signal.SIGTERM)),
    socket=attempt(connect),
    own_child=attempt(lambda: (own.kill(), own.wait())),
)
""",
        grant,
    )
    assert got["before_socket"] == "ok"
    assert got["before_signal"] == "ok"
    assert got["sigterm"] == "PermissionError"
    assert got["parent_alive"]
    assert got["socket"] == "PermissionError"
    assert got["own_child"] == "ok"  # its own domain it may still signal


@needs_landlock(1, "filesystem confinement")
def test_a_confined_child_still_runs_python_numpy_and_subprocesses(grant):
    env = {**ENV, "TMPDIR": grant["scratch"], "HOME": grant["scratch"]}
    got = python(
        """
confinement = confine()
import decimal, tempfile, threading
import numpy
comm = Path(f"/proc/self/task/{threading.get_native_id()}/comm")  # CUDA writes under task/
comm.write_text("solution")
with tempfile.NamedTemporaryFile() as f:
    f.write(b"x")
child = subprocess.run([sys.executable, "-c", "print(6 * 7)"], capture_output=True, text=True)
report(
    confinement=confinement,
    numpy=int(numpy.arange(10).sum()),
    decimal=str(decimal.Decimal("0.1") * 3),
    child=child.stdout.strip(),
    comm=comm.read_text(),
)
""",
        {"grant": grant},
        env=env,
    )
    signals = "landlock scope" if ABI >= 6 else f"not confined: Landlock ABI {ABI} < 6"
    assert got["confinement"] == {
        "landlock_abi": ABI,
        "filesystem": "landlock",
        "signals": signals,
        "ptrace": "landlock",
    }
    assert got["numpy"] == 45
    assert got["decimal"] == "0.3"
    assert got["child"] == "42"
    assert got["comm"] == "solution\n"


@needs_landlock(1, "filesystem confinement")
def test_confining_a_process_with_a_second_thread_is_refused(grant):
    got = python(
        """
import threading, time
threading.Thread(target=time.sleep, args=(2,), daemon=True).start()
try:
    confine()
    said = "confined"
except RuntimeError as e:
    said = str(e)
report(said=said)
""",
        {"grant": grant},
    )
    assert got["said"] == "confine_self confines one thread and this process has 2"


# A subreaper starts a child that leaves a daemon (double fork, setsid, stdio closed) and exits.
SUPERVISOR = """
import time
from rung.common.confine import become_subreaper, descendants, kill_tree
LEAVER = '''
import os, time
if os.fork() == 0:
    os.setsid()
    pid = os.fork()
    if pid == 0:
        null = os.open("/dev/null", os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        time.sleep(30)
        os._exit(0)
    print(pid, flush=True)
    os._exit(0)
os.wait()
'''
subreaper = become_subreaper()
leaver = subprocess.run([sys.executable, "-c", LEAVER], capture_output=True, text=True, timeout=10)
daemon = int(leaver.stdout)
found = descendants(os.getpid())
killed = kill_tree(os.getpid())
report(subreaper=subreaper, daemon=daemon, found=found, killed=killed, left=descendants(os.getpid()),
       gone=not Path(f"/proc/{daemon}").exists())
"""


def test_a_daemon_left_by_a_child_is_found_and_killed():
    got = python(SUPERVISOR, {})
    try:
        assert got["subreaper"]
        assert got["found"] == [got["daemon"]]
        assert got["killed"] == 1
        assert got["left"] == []
        assert got["gone"]  # killed and reaped, not a zombie
    finally:
        if Path(f"/proc/{got['daemon']}").exists():
            os.kill(got["daemon"], 9)


def _ended(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat[stat.rindex(")") + 2] in "ZX"


def test_a_child_that_asked_dies_with_its_parent():
    got = python(
        """
from rung.common.confine import die_with_parent
orphan = subprocess.Popen([sys.executable, "-c", "from rung.common.confine import die_with_parent; "
                           "die_with_parent(); print(flush=True); import time; time.sleep(30)"],
                          stdout=subprocess.PIPE)
orphan.stdout.readline()
report(orphan=orphan.pid)
""",
        {},
    )
    deadline = time.monotonic() + 3
    while not _ended(got["orphan"]) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _ended(got["orphan"])


def test_undumpable_and_subreaper_are_set():
    got = python(
        """
import ctypes
from rung.common.confine import become_subreaper, make_undumpable
libc = ctypes.CDLL(None)
reaper = ctypes.c_int(0)
undumpable = make_undumpable()
subreaper = become_subreaper()
libc.prctl(37, ctypes.byref(reaper), 0, 0, 0)  # PR_GET_CHILD_SUBREAPER
report(undumpable=undumpable, dumpable=libc.prctl(3, 0, 0, 0, 0), subreaper=subreaper, reaper=reaper.value)
""",
        {},
    )
    assert got == {"undumpable": True, "dumpable": 0, "subreaper": True, "reaper": 1}


def test_the_environment_is_an_allow_list():
    environ = {
        "PATH": "/usr/bin",
        "CUDA_VISIBLE_DEVICES": "0",
        "NVIDIA_VISIBLE_DEVICES": "all",
        "LC_ALL": "C.UTF-8",
        "PYTHONPATH": "/src",
        "OPENAI_API_KEY": "sk-1",
        "NVIDIA_API_KEY": "nvapi-1",
        "MY_SECRET_THING": "hunter2",
        "FOO": "bar",
    }
    assert allowed_environment(environ) == {
        "PATH": "/usr/bin",
        "CUDA_VISIBLE_DEVICES": "0",
        "NVIDIA_VISIBLE_DEVICES": "all",
        "LC_ALL": "C.UTF-8",
    }
    assert allowed_environment(environ, keep=["PYTHONPATH"])["PYTHONPATH"] == "/src"


def test_probe_says_what_this_kernel_offers():
    offered = probe()
    assert offered["landlock_abi"] == str(ABI)
    assert set(offered) == {
        "landlock_abi",
        "filesystem",
        "truncate",
        "device_ioctl",
        "ptrace",
        "signals",
        "abstract_unix_sockets",
        "subreaper",
    }
    if ABI:
        assert offered["signals"] == ("yes" if ABI >= 6 else f"no: Landlock ABI {ABI} < 6")
    assert all(v == "yes" or v.startswith("no: ") for v in offered.values() if v != str(ABI))
