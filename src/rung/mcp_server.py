"""`rung mcp`: the verbs as tools of a Model Context Protocol server on stdio, for coding agents.

Built on the official SDK (`mcp` 2, its `MCPServer`). Each tool returns the JSON text that the
matching `--json` command prints (the documents of rung.views), so an agent reads one format
whichever way it asks; `bench`, `profile` and `dump` are that rung of a stored run, as `rung show
RUN --rung NAME --json` gives it. A RungError comes back as a tool error carrying its one-line
message, and the server goes on serving.

Paths are relative to the workspace root (absolute ones are taken as they are). `read_artifact`
reads a file only where its path, symlinks followed, lies inside the workspace folder, and
returns its text, cut after MAX_ARTIFACT_BYTES.

The protocol owns this process's stdout. Judges and solution processes write theirs to log files under `.rung/`, the
controller prints nothing, and while it serves the SDK points file descriptor 1 at stderr, so a
stray print lands there and never on the wire.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from pathlib import Path

from rung import api, views
from rung.errors import RungError, UsageError
from rung.spec import dumps
from rung.store import find_workspace

try:
    from mcp.server.mcpserver import MCPServer
    from mcp.types import CallToolResult, TextContent
except ImportError:
    raise UsageError("rung mcp needs the mcp package: pip install 'rung[mcp]'") from None

MAX_ARTIFACT_BYTES = 200_000

INSTRUCTIONS = """\
rung checks GPU kernel versions. `check` climbs the ladder (load, compile, run, guard, correct,
scale, bench, roofline, dump, trace, profile) for solution files of a problem and stores each run;
`show`, `history`, `diff` and `bench`/`dump`/`profile` read stored runs; `read_artifact` reads the
files a run kept under .rung/runs/<id>/. Every answer is the JSON of the matching `rung ... --json`
command. A fast but wrong kernel is worthless: a version that fails any rung is not an improvement.
"""


def build(workspace: Path) -> MCPServer:
    """The server for one workspace: its tools read and write `workspace/.rung/`."""
    root = workspace.resolve()
    server: MCPServer = MCPServer("rung", instructions=INSTRUCTIONS, log_level="WARNING")

    def tool(fn: Callable[..., str]) -> None:
        """Register `fn` (its name, docstring and arguments) with a RungError as a tool error."""

        @functools.wraps(fn)
        def answer(*args: object, **kwargs: object) -> CallToolResult:
            try:
                text, failed = fn(*args, **kwargs), False
            except RungError as e:
                text, failed = str(e), True
            return CallToolResult(content=[TextContent(type="text", text=text)], is_error=failed)

        server.add_tool(answer, structured_output=False)

    def here(path: str) -> Path:
        return root / path

    @tool
    def check(problem: str, solutions: list[str]) -> str:
        """Climb the ladder for each solution file of a problem folder and store the runs; the JSON of
        `rung check PROBLEM SOLUTION... --json`: every rung's status, message, figures, artifacts."""
        runs = api.check(here(problem), [here(s) for s in solutions], root)
        return dumps(views.check_doc(runs))

    @tool
    def bench(run: int) -> str:
        """The bench rung of a stored run: per benchmark case the median time, its spread, the
        reference and baseline timed beside it, speedups (`rung show RUN --rung bench --json`)."""
        return dumps(views.rung_doc(api.show(run, root), "bench"))

    @tool
    def profile(run: int) -> str:
        """The profile rung of a stored run: Nsight Compute figures of the hot kernels
        (`rung show RUN --rung profile --json`)."""
        return dumps(views.rung_doc(api.show(run, root), "profile"))

    @tool
    def dump(run: int) -> str:
        """The dump rung of a stored run: SASS facts per kernel (tensor-core instructions, load and
        store widths, TMA, local memory) and the files kept (`rung show RUN --rung dump --json`)."""
        return dumps(views.rung_doc(api.show(run, root), "dump"))

    @tool
    def history(problem: str) -> str:
        """Every stored run of a problem (its folder or its name), oldest first, with verdicts
        (`rung history PROBLEM --json`)."""
        return dumps(views.history_doc(Path(problem).name, api.history(here(problem), root)))

    @tool
    def show(run: int) -> str:
        """One stored run in full: every rung, its figures and artifacts (`rung show RUN --json`)."""
        return dumps(views.show_doc(api.show(run, root)))

    @tool
    def diff(run_a: int, run_b: int) -> str:
        """Two stored runs compared: the unified diff of their sources, the rungs whose status
        changed, each benchmark case's median a → b with the ratio (`rung diff A B --json`)."""
        return dumps(api.diff(run_a, run_b, root))

    @tool
    def problem_info(problem: str) -> str:
        """What a problem holds: its docstring, test and benchmark cases, tolerance, whether it has a
        cost model (`rung problem PROBLEM --json`)."""
        return dumps(views.problem_doc(api.problem(here(problem), root)))

    @tool
    def context_search(query: str, limit: int = 8) -> str:
        """The best snippets of indexed documentation and example code for free text (`tl.dot`,
        `num_warps`, `cp.async.bulk`), with file and line (`rung context search QUERY --json`)."""
        return dumps(views.context_doc(query, api.context_search(query, limit, root)))

    @tool
    def read_artifact(path: str) -> str:
        """The text of a file inside the workspace, such as an artifact a run kept under
        .rung/runs/<id>/ (PTX, SASS, logs, result.json); paths outside the workspace are refused."""
        return _read_inside(root, path)

    return server


def _read_inside(root: Path, path: str) -> str:
    target = (root / path).resolve()
    if not target.is_relative_to(root):
        raise UsageError(f"{path}: outside the workspace {root}; only files inside it can be read")
    if not target.is_file():
        raise UsageError(f"{path}: no such file in the workspace {root}")
    size = target.stat().st_size
    with target.open("rb") as f:
        data = f.read(MAX_ARTIFACT_BYTES)
    if b"\0" in data:
        raise UsageError(f"{path}: a binary file ({size} bytes); read its text forms (PTX, SASS) instead")
    text = data.decode(errors="replace")
    if size > MAX_ARTIFACT_BYTES:
        text += f"\n[cut: the file holds {size} bytes; the first {MAX_ARTIFACT_BYTES} are shown]"
    return text


def serve(workspace: Path | None) -> None:
    """Serve the workspace's tools on stdin and stdout until the client closes stdin."""
    server = build(workspace or find_workspace())
    with contextlib.suppress(KeyboardInterrupt):
        server.run("stdio")
