"""A diagnostic, not part of rung: every Python process started with this folder on PYTHONPATH
profiles itself (cProfile) while /tmp/diag exists, and writes /tmp/diag/<pid>.prof with its
command line beside it at a normal exit. Used to see where a warm check's run rung spends the
second it does not spend cold (2026-12-07-d, call 4); a confined solution process cannot write
there, so only the controller's and the judges' profiles come back."""

import atexit
import cProfile
import os
import sys

if os.path.isdir("/tmp/diag"):
    _profile = cProfile.Profile()
    _profile.enable()

    def _dump() -> None:
        try:
            _profile.disable()
            base = f"/tmp/diag/{os.getpid()}"
            _profile.dump_stats(base + ".prof")
            with open(base + ".argv", "w") as f:
                f.write(" ".join(sys.orig_argv))
        except Exception:
            pass

    atexit.register(_dump)
