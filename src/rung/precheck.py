"""The cheap look at a solution before any judge starts: does it parse, is its language installed.

In the controller, on the bytes that will run, without executing them: `compile()` parses the
source (a syntax error needs no judge, no torch, no solution process to find), and each kernel
language its import statements name is looked up with `importlib.util.find_spec` on its
top-level package (found, not imported). A syntax error fails `load` at once; a language whose
optional extra is not installed SKIPs it, naming the install line, as pytest's importorskip does:
the version is not wrong, it cannot be checked here, so it reads unverified, never ok. Anything
this look passes still meets the solution process's own load, which decides. A source built to
exhaust the parser's stack (100,000 unary minus signs) fails load here, rather than raising
MemoryError in the controller; it must be looked at before anything else parses it.
"""

from __future__ import annotations

import importlib.util

from rung import backends
from rung.spec import RungResult, Status


def load_verdict(name: str, source: str) -> RungResult | None:
    """The load rung's result where the source alone decides it; None where a judge must look."""
    try:
        compile(source, name, "exec", dont_inherit=True)
    except SyntaxError as e:
        where = f"at {name}:{e.lineno}" if e.lineno else f"in {name}"  # NUL bytes have no line
        return RungResult("load", Status.FAILED, f"SyntaxError {where}: {e.msg}")
    except (MemoryError, RecursionError):  # nested past the parser's stack: no import would get further
        return RungResult("load", Status.FAILED, f"{name} is nested too deeply for Python's parser")
    missing = missing_extras(source)
    if missing:
        return RungResult("load", Status.SKIPPED, "; ".join(missing))
    return None


def missing_extras(source: str) -> list[str]:
    """For each kernel language the source imports whose package is not installed here, what to
    install: `cute solution: cutlass is not installed here; needs the cute extra: pip install 'rung[cute]'`."""
    said = []
    for backend in backends.detect_all(source):
        tops = sorted({name.split(".")[0] for name in backend.IMPORTS})
        absent = [top for top in tops if not _installed(top)]
        if backend.EXTRA and absent:
            language = backend.BACKEND.value
            said.append(
                f"{language} solution: {', '.join(absent)} is not installed here; needs the "
                f"{backend.EXTRA} extra: pip install 'rung[{backend.EXTRA}]'"
            )
    return said


def _installed(top: str) -> bool:
    try:
        return importlib.util.find_spec(top) is not None
    except (ImportError, ValueError):  # a broken installation reads as absent
        return False
