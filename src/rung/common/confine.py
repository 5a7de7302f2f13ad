"""Confinement of an untrusted solution process on Linux, with what an unprivileged user has.

`confine_self` runs inside the solution process, after the interpreter has started and before
any thread or any solution code: no_new_privs, then a Landlock domain that lets the process read
the system and the paths it is given, write only its scratch paths, use the GPU's device files,
and neither ptrace nor signal nor reach by abstract unix socket any process outside its domain.
What the kernel lacks is recorded as "not confined: why" in the `Confinement`, never raised.
Confined so on an H200 (6.18, driver 580), torch's CUDA, cuBLAS, a Triton kernel's build and
launch, a CUDA IPC handle and nvidia-smi ran.

Another process's /proc/<pid>/environ stays closed because no rule names it. Landlock's ptrace
rule does not close it: on 6.18 a confined root process is refused ptrace, /proc/<pid>/mem,
stack, cwd and root, yet reads environ, maps and auxv when /proc is readable (tested). Nor does
PR_SET_DUMPABLE, which root's CAP_SYS_PTRACE passes. Not limited here: the network (Landlock's
TCP rules, ABI 4), and, run as root, the capabilities that Landlock does not govern (raw sockets,
module loading); an unprivileged user closes those.

The process tree: `become_subreaper` in the process that starts a candidate, so that a daemon
the solution leaves (double fork, setsid) is re-parented to it rather than to init; `kill_tree`
ends them all when the candidate ends. `allowed_environment` builds the solution's environment
from an allow-list, so a key passes only if it is named.

`check_imports`, called before confining, refuses to go on where a module of rung's came from
outside rung's own folder, or any module from a folder the solution can write (its interpreter
starts isolated, `common.child.python_command`, so none should).

The Landlock calls are written here with ctypes: the `landlock` package on PyPI is a 1.0.0.dev
pre-release and does not expose scoped signals (ABI 6), which is the signal boundary we need.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import signal
import stat
import sys
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path

_LINUX = sys.platform.startswith("linux")
# landlock_create_ruleset, landlock_add_rule, landlock_restrict_self: the unified numbers of 5.13+
_SYSCALLS = {"x86_64": (444, 445, 446), "aarch64": (444, 445, 446), "arm64": (444, 445, 446)}
_CREATE_RULESET_VERSION = 1 << 0
_RULE_PATH_BENEATH = 1

# LANDLOCK_ACCESS_FS_*: ABI 1 has bits 0-12; REFER is ABI 2, TRUNCATE ABI 3, IOCTL_DEV ABI 5.
_EXECUTE, _WRITE_FILE, _READ_FILE, _READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_MAKE_CHAR, _MAKE_BLOCK = 1 << 6, 1 << 11
_REFER, _TRUNCATE, _IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
_FILE_RIGHTS = _EXECUTE | _WRITE_FILE | _READ_FILE | _TRUNCATE | _IOCTL_DEV  # those a file rule may hold
_READ = _EXECUTE | _READ_FILE | _READ_DIR
_DEVICE = _READ_FILE | _WRITE_FILE | _TRUNCATE | _IOCTL_DEV
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1 << 0, 1 << 1  # ABI 6

# Read beneath these by every solution. /etc only by name: /etc/environment or ssh host keys may
# hold secrets. /proc only by name, and this process's own folder below: on 6.18 the ptrace scope
# refuses another process's mem, stack, cwd and root but not its environ, maps or auxv, so a rule
# on all of /proc would let a solution read the controller's environment.
_SYSTEM_READ = (
    "/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/sys",
    "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime", "/etc/timezone",
    "/etc/passwd", "/etc/group", "/etc/nsswitch.conf", "/etc/hosts", "/etc/os-release",
    "/proc/cpuinfo", "/proc/meminfo", "/proc/stat", "/proc/devices", "/proc/filesystems",
    "/proc/version", "/proc/sys", "/proc/driver",
)  # fmt: skip
_SYSTEM_WRITE = ("/dev/shm",)
# This process's own /proc/<pid>, readable, and its task folder writable too: CUDA's first call
# fails with error 304 (OS call failed) unless it may write there (H200, driver 580, 2026-12-04).
_OWN_PROC = (("/proc/self", _READ), ("/proc/self/task", _READ | _WRITE_FILE | _TRUNCATE))
# Open paths under /proc stay open (O_PATH, close-on-exec): procfs may drop an unused folder and
# make a new inode for it, which no rule names; a held one is not dropped.
_PINNED: list[int] = []
_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/dri")

_ENV_NAMES = frozenset(
    {"PATH", "HOME", "LANG", "TZ", "TMPDIR", "TERM", "USER", "LOGNAME", "LD_LIBRARY_PATH",
     "OMP_NUM_THREADS", "XDG_CACHE_HOME", "VIRTUAL_ENV", "CONDA_PREFIX"}
)  # fmt: skip
_ENV_PREFIXES = ("LC_", "CUDA_", "NVIDIA_", "TRITON_", "TORCH_", "PYTORCH_", "MKL_", "OPENBLAS_")
_ENV_SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL")  # NVIDIA_API_KEY exists

_PR_SET_PDEATHSIG, _PR_SET_DUMPABLE, _PR_SET_CHILD_SUBREAPER, _PR_SET_NO_NEW_PRIVS = 1, 4, 36, 38


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),  # ABI 4
        ("scoped", ctypes.c_uint64),  # ABI 6
    ]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


@dataclass
class Confinement:
    """What was applied to this process, recorded in each run."""

    landlock_abi: int  # 0 where the kernel has no Landlock
    filesystem: str  # "landlock" or "not confined: <why>"
    signals: str  # "landlock scope" or "not confined: <why>"
    ptrace: str  # "landlock" or "not confined: <why>"

    def to_dict(self) -> dict:
        """The record as JSON-ready data."""
        return asdict(self)


@cache
def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc


def _syscall(number: int, *args: object) -> int:
    return int(_libc().syscall(ctypes.c_long(number), *args))


def _prctl(option: int, arg: int) -> bool:
    if not _LINUX:
        return False
    zero = ctypes.c_ulong(0)
    return _libc().prctl(ctypes.c_int(option), ctypes.c_ulong(arg), zero, zero, zero) == 0


def _os_error(call: str) -> OSError:
    code = ctypes.get_errno()
    return OSError(code, f"{call}: {os.strerror(code)}")


def _abi() -> tuple[int, str]:
    """The Landlock ABI of this kernel, and why it is 0 where it is."""
    if not _LINUX:
        return 0, f"not Linux ({sys.platform})"
    machine = os.uname().machine
    if machine not in _SYSCALLS:
        return 0, f"Landlock syscall numbers not known here for {machine}"
    abi = _syscall(_SYSCALLS[machine][0], None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    if abi > 0:
        return abi, ""
    code = ctypes.get_errno()
    if code == errno.ENOSYS:
        return 0, "kernel built without Landlock"
    if code == errno.EOPNOTSUPP:
        return 0, "Landlock not enabled at boot (the lsm= list)"
    return 0, f"landlock_create_ruleset: {os.strerror(code)}"


def landlock_abi() -> int:
    """The Landlock ABI version the running kernel offers; 0 where it has none."""
    return _abi()[0]


def _since(abi: int, needed: int) -> str:
    return "yes" if abi >= needed else f"no: Landlock ABI {abi} < {needed}"


def probe() -> dict[str, str]:
    """What this kernel offers, for `rung device`: the ABI, and per mechanism "yes" or "no: why"."""
    abi, why = _abi()
    if abi == 0:
        no = f"no: {why}"
        return {"landlock_abi": "0", "filesystem": no, "truncate": no, "device_ioctl": no,
                "ptrace": no, "signals": no, "abstract_unix_sockets": no,
                "subreaper": "yes" if _LINUX else no}  # fmt: skip
    return {
        "landlock_abi": str(abi),
        "filesystem": "yes",
        "truncate": _since(abi, 3),
        "device_ioctl": _since(abi, 5),
        "ptrace": "yes",
        "signals": _since(abi, 6),
        "abstract_unix_sockets": _since(abi, 6),
        "subreaper": "yes",
    }


def _handled_fs(abi: int) -> int:
    handled = (1 << 13) - 1
    if abi >= 2:
        handled |= _REFER
    if abi >= 3:
        handled |= _TRUNCATE
    if abi >= 5:
        handled |= _IOCTL_DEV
    return handled


def _add_rule(ruleset_fd: int, path: Path, access: int) -> None:
    """Allow `access` beneath `path` (a file keeps only file rights).

    A path that is missing, or that Landlock refuses, is skipped: it stays closed.
    """
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return
    try:
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            access &= _FILE_RIGHTS
        rule = _PathBeneathAttr(allowed_access=access, parent_fd=fd)
        number = _SYSCALLS[os.uname().machine][1]
        if access:
            _syscall(number, ctypes.c_int(ruleset_fd), ctypes.c_int(_RULE_PATH_BENEATH), ctypes.byref(rule),
                     ctypes.c_uint32(0))  # fmt: skip
    finally:
        if path.parts[:2] == ("/", "proc"):
            _PINNED.append(fd)
        else:
            os.close(fd)


def _rules(read: list[Path], write: list[Path], handled: int) -> list[tuple[Path, int]]:
    # Everything handled but making device nodes: root could mknod a disk in its scratch and read it.
    write_access = handled & ~(_MAKE_CHAR | _MAKE_BLOCK)
    devices = [Path(p) for p in _DEVICES] + sorted(Path("/dev").glob("nvidia*"))
    return (
        [(Path(p), _READ & handled) for p in _SYSTEM_READ]
        + [(Path(p), access & handled) for p, access in _OWN_PROC]
        + [(p, _READ & handled) for p in read]
        + [(Path(p), write_access) for p in _SYSTEM_WRITE]
        + [(p, write_access) for p in write]
        + [(p, _DEVICE & handled) for p in devices]
    )


def _threads() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 1


def confine_self(
    read: list[Path], write: list[Path], other_threads: bool = False, scopes: bool = True
) -> Confinement:
    """Confine this process and every process it starts from now on; say what was applied.

    It may read (files, directories, execute) beneath `read` and the system paths (/usr, /lib,
    /sys, a few files of /etc and /proc, its own /proc/<pid>), write beneath `write`, /dev/shm and
    its own /proc/<pid>/task, and read, write and ioctl the null, zero and random devices,
    /dev/nvidia* and /dev/dri; nothing else. A process it starts cannot read its own /proc/<pid>
    (no rule made now can name it). It may not ptrace, signal or connect by abstract unix socket
    to any process outside its domain. A missing path, or one Landlock refuses, is skipped (it
    stays closed). Files already open stay usable: call it before opening anything it should not
    keep. Landlock confines the calling thread only (and the threads and processes it starts
    later), so a second live thread raises RuntimeError, unless `other_threads` says they are
    not the solution's (a profiler's injected thread). `scopes=False` leaves signals and abstract
    unix sockets open: Nsight Compute reaches the process it profiles through them.
    Callers point HOME, TMPDIR and caches (TRITON_CACHE_DIR) at a `write` path, and grant the C
    compiler's folder where it is outside /usr (Triton builds its launcher with it: /opt/gcc).
    """
    abi, why = _abi()
    if abi == 0:
        no = f"not confined: {why}"
        return Confinement(landlock_abi=0, filesystem=no, signals=no, ptrace=no)
    threads = _threads()
    if threads > 1 and not other_threads:
        raise RuntimeError(f"confine_self confines one thread and this process has {threads}")
    handled = _handled_fs(abi)
    scoped = _SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL if abi >= 6 and scopes else 0
    attr = _RulesetAttr(handled_access_fs=handled, handled_access_net=0, scoped=scoped)
    size = 8 if abi < 4 else 16 if abi < 6 else ctypes.sizeof(attr)  # the struct this ABI knows
    create, _, restrict = _SYSCALLS[os.uname().machine]
    try:
        if not _prctl(_PR_SET_NO_NEW_PRIVS, 1):
            raise _os_error("prctl(PR_SET_NO_NEW_PRIVS)")
        ruleset_fd = _syscall(create, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
        if ruleset_fd < 0:
            raise _os_error("landlock_create_ruleset")
        try:
            for path, access in _rules(read, write, handled):
                _add_rule(ruleset_fd, path, access)
            if _syscall(restrict, ctypes.c_int(ruleset_fd), ctypes.c_uint32(0)) != 0:
                raise _os_error("landlock_restrict_self")
        finally:
            os.close(ruleset_fd)
    except OSError as e:
        no = f"not confined: {e.strerror}"
        return Confinement(landlock_abi=abi, filesystem=no, signals=no, ptrace=no)
    signals = (
        "landlock scope"
        if scoped
        else "not confined: left open for a profiler"
        if abi >= 6
        else f"not confined: Landlock ABI {abi} < 6"
    )
    return Confinement(landlock_abi=abi, filesystem="landlock", signals=signals, ptrace="landlock")


def check_imports(writable: Iterable[Path]) -> None:
    """Raise ImportError naming each module imported so far that came from a folder in
    `writable`, or, for rung's own, from outside the folder `rung` was imported from: a planted
    package (a `rung` or `torch` in a scratch folder) would run unconfined."""
    import rung

    home = Path(rung.__file__).resolve().parent
    folders = [Path(w).resolve() for w in writable]
    wrong = []
    for name, module in list(sys.modules.items()):
        where = getattr(module, "__file__", None)
        if not where:
            continue
        path = Path(where).resolve()
        ours = name == "rung" or name.startswith("rung.")
        if any(path.is_relative_to(f) for f in folders) or (ours and not path.is_relative_to(home)):
            wrong.append(f"{name} from {path}")
    if wrong:
        raise ImportError(
            "refusing to run: modules imported from a folder the solution can write, or rung's own "
            f"from outside its installation ({home}): " + "; ".join(wrong[:10])
        )


def allowed_environment(environ: Mapping[str, str], keep: Iterable[str] = ()) -> dict[str, str]:
    """The variables of `environ` a solution may see: an allow-list plus the names in `keep`.

    Allowed are PATH, HOME, locale, temp and terminal names, and the CUDA_, NVIDIA_, TRITON_,
    TORCH_, PYTORCH_, MKL_ and OPENBLAS_ families, but no name that says KEY, TOKEN, SECRET,
    PASSWORD or CREDENTIAL (NVIDIA_API_KEY); every other variable is dropped.
    """
    kept = set(keep)

    def allowed(name: str) -> bool:
        if name in kept or name in _ENV_NAMES:
            return True
        upper = name.upper()
        return name.startswith(_ENV_PREFIXES) and not any(w in upper for w in _ENV_SECRET_WORDS)

    return {name: value for name, value in environ.items() if allowed(name)}


def make_undumpable() -> bool:
    """prctl(PR_SET_DUMPABLE, 0): no core dump, /proc files closed to other users; False off Linux."""
    return _prctl(_PR_SET_DUMPABLE, 0)


def become_subreaper() -> bool:
    """prctl(PR_SET_CHILD_SUBREAPER, 1): orphans among this process's descendants become its children."""
    return _prctl(_PR_SET_CHILD_SUBREAPER, 1)


def die_with_parent() -> None:
    """prctl(PR_SET_PDEATHSIG, SIGKILL): the kernel kills this process when its parent thread ends."""
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _processes() -> Iterator[tuple[int, str, int]]:
    """(pid, state, parent pid) of every process, from /proc/<pid>/stat."""
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            line = Path(f"/proc/{name}/stat").read_text()
        except OSError:
            continue  # it ended while we looked
        state, ppid = line[line.rindex(")") + 2 :].split()[:2]  # the name may hold ") "
        yield int(name), state, int(ppid)


def _live_parents() -> dict[int, int]:
    """pid -> parent pid of every live (not zombie) process."""
    return {pid: ppid for pid, state, ppid in _processes() if state not in ("Z", "X")}


def descendants(pid: int) -> list[int]:
    """Every live descendant of `pid` (children first), by following parent pids through /proc.

    A daemon that left by double fork is found only where `pid` or a process between is a
    subreaper: otherwise it is re-parented to init and is no one's descendant here.
    """
    children: dict[int, list[int]] = {}
    for child, parent in _live_parents().items():
        children.setdefault(parent, []).append(child)
    found = list(children.get(pid, []))
    for p in found:  # the list grows as it is walked: breadth first
        found.extend(children.get(p, []))
    return found


def _signal(pid: int, sig: int) -> bool:
    try:
        os.kill(pid, sig)
        return True
    except ProcessLookupError:
        return False


def kill_tree(pid: int) -> int:
    """SIGKILL every descendant of `pid` (not `pid` itself); returns how many were killed.
    kill_tree(os.getpid()) in a subreaper ends every process it has started, the candidate's own
    included."""
    return kill_processes(descendants(pid))


def kill_processes(pids: list[int]) -> int:
    """SIGKILL these processes and every descendant of theirs; returns how many were killed.

    Each is stopped first, scanning until no new one appears, so none can fork while the tree is
    being killed; then all are killed, and those that are this process's children are reaped
    (waiting up to 2 s for each: one stuck in the driver may take longer and stays a zombie).
    """
    stopped: list[int] = []
    for _ in range(1000):
        seen = set(stopped)
        new = [p for root in pids for p in (root, *descendants(root)) if p not in seen]
        if not new:
            break
        stopped += [p for p in dict.fromkeys(new) if _signal(p, signal.SIGSTOP)]
    killed = [p for p in stopped if _signal(p, signal.SIGKILL)]
    for p in killed:
        _reap(p)
    return len(killed)


def _reap(pid: int) -> None:
    deadline = time.monotonic() + 2.0
    try:
        while os.waitpid(pid, os.WNOHANG) == (0, 0) and time.monotonic() < deadline:
            time.sleep(0.005)
    except ChildProcessError:
        pass  # not our child: its own parent reaps it


def reap_zombies() -> int:
    """Reap this process's children that have ended and that nobody waited for (the orphans a
    subreaper inherits and kills end up so); returns how many."""
    me, count = os.getpid(), 0
    for pid, state, ppid in _processes():
        if state == "Z" and ppid == me:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
                count += 1
    return count
