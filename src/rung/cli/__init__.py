"""The `rung` command: a thin layer over the library that maps errors to exit codes and words;
one module per command group, each registering its commands on `app.app`.

Exit codes: 0 no solution failed (each verified, or not verifiable on this machine: a skip, as
pytest counts one; `--json`'s `ok` is true only for a verified one); 1 a solution failed; 2 bad
usage or a bad problem (one line on stderr, no traceback); 130 interrupted.
"""

from __future__ import annotations

import sys

from rung import runner

# Importing a command module registers its commands; `rung --help` lists them in import order.
from rung.cli import cache, check, context, optimize, runs, setup  # noqa: F401
from rung.cli.app import app, err, with_settings
from rung.common import confine
from rung.errors import RungError

for _typer in (app, cache.cache_app, context.context_app):
    for _info in _typer.registered_commands:
        _info.callback = with_settings(_info.callback)


def main() -> None:
    """Entry point: Typer handles usage errors (exit 2); rung's own errors are one line, exit 2.
    The controller is not dumpable (its memory and environment, API keys included, stay out of
    other processes' reach) and takes SIGTERM as an interrupt."""
    confine.make_undumpable()
    runner.on_sigterm()
    try:
        app()
    except RungError as e:
        err.print(f"rung: error: {e}", markup=False)
        sys.exit(2)
