"""The one error tree of rung.

Library code raises these; the runner turns failures inside a rung into statuses; only the CLI
maps them to exit codes and words. Every message is one line that says what and where.
"""


class RungError(Exception):
    """Base of every error rung raises on purpose."""


class UsageError(RungError):
    """Bad command-line usage or settings (exit code 2)."""


class ProblemError(RungError):
    """A problem folder that cannot be used: missing files, import failure, missing names (exit 2)."""


class SolutionError(RungError):
    """A solution file that cannot be read at all (missing, not a file)."""


class StoreError(RungError):
    """The workspace store cannot be opened or written."""


class WorkerError(RungError):
    """A judge or solution process died or broke its protocol."""
