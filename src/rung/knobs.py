"""Every `RUNG_*` setting, declared once and typed.

Nothing else in rung reads `os.environ` for its own settings. Each knob has a name, a type, a
default and one line of help; `docs/env_vars.md` is the table of them. Read a knob with
`knobs.get("RUNG_SEED")`; tests scope a value with `knobs.scoped(RUNG_TRIALS=1)`. A value given
by a flag or a project file reaches `get` because the CLI resolves every source first
(`rung.settings`) and exports the result as RUNG_* here, which judges inherit.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import platformdirs

from rung.ladder import LADDER


@dataclass(frozen=True)
class Knob:
    name: str
    type: type
    default: Any
    help: str
    pattern: str = ""  # what a text value must match, checked where settings are resolved
    at_least: float = 0  # the smallest number it takes (a count or a duration is never negative)


_RUNG = "|".join(spec.name for spec in LADDER)


KNOBS: dict[str, Knob] = {
    k.name: k
    for k in [
        Knob(
            "RUNG_WORKSPACE",
            str,
            "",
            "workspace folder (holding .rung/); default: nearest .rung upwards, else ./",
        ),
        Knob(
            "RUNG_SEED",
            int,
            -1,
            "base seed for fresh inputs; -1 draws a new one per run (recorded)",
            at_least=-1,
        ),
        Knob(
            "RUNG_TRIALS",
            int,
            3,
            "fresh seeds per test case in the correct rung (KernelBench files: its own 5 unless set)",
            at_least=1,
        ),
        Knob(
            "RUNG_STRICT",
            int,
            0,
            "1: GPU MODE and KernelBench solutions must also pass rung's own dtype, shape and tolerance rules",
        ),
        Knob("RUNG_TIMEOUT_S", float, 0.0, "time limit for every rung in seconds; 0 keeps each rung's own"),
        Knob("RUNG_CPU_MAX_CASE_MB", float, 64.0, "largest case (inputs + output, MiB) checked on the CPU"),
        Knob(
            "RUNG_CPU_MAX_CASE_GFLOP",
            float,
            2.0,
            "largest case (GFLOP, from the cost model) checked on the CPU",
        ),
        Knob(
            "RUNG_WORKER_MEMORY_MB",
            int,
            8192,
            "address-space limit of a CPU solution process in MiB; 0 for none",
        ),
        Knob(
            "RUNG_BENCH_WARMUP_S", float, 0.1, "warm-up per timed function and case, in seconds of wall time"
        ),
        Knob(
            "RUNG_BENCH_REL_SEM",
            float,
            0.005,
            "bench stops when the median's standard error is under this fraction of the median",
        ),
        Knob("RUNG_BENCH_MAX_S", float, 5.0, "time cap for sampling one function on one case, in seconds"),
        Knob(
            "RUNG_BENCH_SETS",
            int,
            0,
            "input sets bench's timed calls take in turn: 0 for as many as fit in 2 GiB (2 to 8), 1 for the same inputs every call (GPU MODE's benchmark mode)",
        ),
        Knob(
            "RUNG_BASELINE",
            str,
            "compile",
            "baseline timed beside the reference: 'compile' (torch.compile) or 'none'",
            pattern=r"^(compile|none)$",
        ),
        Knob("RUNG_ROOFLINE_TARGET", float, 0.9, "fraction of the roofline counted as 'at roofline'"),
        Knob(
            "RUNG_CACHE_DIR",
            str,
            "",
            "cache folder: device ceilings, kept reference timings (default: the platform's user cache, ~/.cache/rung on Linux) and, where set, kernel builds in its builds/ (default: the workspace's .rung/cache/builds)",
        ),
        Knob(
            "RUNG_KEEP_TIMINGS",
            int,
            1,
            "1: time the reference and the baseline once per problem, case and GPU, reused by later checks; 0: in every check",
        ),
        Knob("RUNG_ARCH", str, "sm_90", "target the compile rung builds for", pattern=r"^sm_\d+[a-z]?$"),
        Knob(
            "RUNG_SKIP",
            str,
            "",
            "comma-separated rungs to leave out (SKIPPED, saying so), e.g. 'profile' while iterating",
            pattern=rf"^\s*(({_RUNG})\s*(,\s*({_RUNG})\s*)*)?$",
        ),
        Knob(
            "RUNG_SCOPES",
            int,
            0,
            "1: the scopes rung traces inside each Triton kernel with proton (cycles per marked region and per phase); 0 leaves it SKIPPED",
        ),
        Knob(
            "RUNG_MEMCHECK",
            int,
            0,
            "1: the memcheck rung runs the smallest test cases under compute-sanitizer (10-100x slower kernels); 0 leaves it SKIPPED",
        ),
        Knob(
            "RUNG_CONFINE",
            int,
            1,
            "1: confine solution processes (Landlock, scoped signals); 0 only to diagnose a kernel that refuses it",
        ),
        Knob(
            "RUNG_FORK_SERVER",
            int,
            1,
            "1: solution processes are forked from the judge's fork server (torch imported once); 0: each starts a fresh interpreter",
        ),
        Knob(
            "RUNG_SECRET_ENV",
            str,
            "",
            "extra comma-separated variable names kept from judges and solution processes",
        ),
        Knob("RUNG_KEEP_STDERR_LINES", int, 20, "lines of a judge's stderr kept in a crash message"),
        Knob(
            "RUNG_EXECUTOR",
            str,
            "local",
            "where rung check climbs candidates at once: local, ssh://[user@]host[:port] (comma-separated), ray or ray://address",
            pattern=r"^(local|ray|ray://\S+|ssh://\S+)$",
        ),
        Knob(
            "RUNG_WORKERS",
            int,
            0,
            "candidates climbing at once: N workers (local: at most one per visible GPU, N on the CPU); 0: one by one with the local executor, the executor's own number with another",
        ),
        Knob(
            "RUNG_REPAIR_TURNS",
            int,
            3,
            "rounds rung optimize gives the agent to make a failing starting version pass; 0 stops at once",
        ),
    ]
}


def get(name: str) -> Any:
    """The knob's value from the environment, converted to its type, or its default."""
    knob = KNOBS[name]
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return knob.default
    try:
        return knob.type(raw)
    except ValueError as e:
        from rung.errors import UsageError

        raise UsageError(f"{name}={raw!r} is not a valid {knob.type.__name__}") from e


def cache_dir() -> Path:
    """rung's cache folder: RUNG_CACHE_DIR, else the platform's user cache folder for rung
    (platformdirs: ~/.cache/rung on Linux, or $XDG_CACHE_HOME/rung)."""
    configured = str(get("RUNG_CACHE_DIR"))
    return Path(configured) if configured else platformdirs.user_cache_path("rung", appauthor=False)


def given(name: str) -> bool:
    """Whether the knob is set in the environment (a format's own default yields to it)."""
    KNOBS[name]  # unknown names are a bug, as in get()
    return bool(os.environ.get(name))


_keys_read: set[str] = set()  # variables api_key() read: secrets whatever their names


def api_key(name: str) -> str:
    """An API key from the environment ('' if unset). Not a knob: never printed, never stored,
    and the variable is kept from every judge's environment from then on."""
    _keys_read.add(name)
    return os.environ.get(name, "")


def secret_names(environ: dict[str, str]) -> set[str]:
    """Names of variables a judge must not see: keys, tokens, passwords, RUNG_SECRET_ENV, and
    every variable an API key was read from."""
    markers = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH")
    extra = {n.strip() for n in str(get("RUNG_SECRET_ENV")).split(",") if n.strip()} | _keys_read
    return {n for n in environ if any(m in n.upper() for m in markers)} | (extra & set(environ))


@contextmanager
def scoped(**values: Any) -> Iterator[None]:
    """Set knobs for the duration of a block (for tests); restores what was there."""
    for name in values:
        if name not in KNOBS:
            raise KeyError(f"unknown knob {name}")
    saved = {n: os.environ.get(n) for n in values}
    try:
        for n, v in values.items():
            os.environ[n] = str(v)
        yield
    finally:
        for n, v in saved.items():
            if v is None:
                os.environ.pop(n, None)
            else:
                os.environ[n] = v
