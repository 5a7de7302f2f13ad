"""`rung mcp`: the verbs as tools of a Model Context Protocol server on stdio, for coding agents.

Built on the official SDK (`mcp` 2, its `MCPServer`). Each tool returns the JSON text that the
matching `--json` command prints (the documents of rung.views), so an agent reads one format
whichever way it asks; `bench`, `profile` and `dump` are that rung of a stored run, as `rung show
RUN --rung NAME --json` gives it. A RungError comes back as a tool error carrying its one-line
message, and the server goes on serving.

Paths are relative to the workspace root (absolute ones are taken as they are). `read_artifact`
reads a file only where its path, symlinks followed, lies inside the workspace folder, a page at
a time (`offset` and `length` in bytes, at most MAX_ARTIFACT_BYTES): the page's text with the
file's size and where the next page starts. `history` is paged too (HISTORY_PAGE versions by
default): an agent's context is bounded, a problem's history is not.

`check` reports progress while it climbs (mcp_progress: per rung, per case, a heartbeat), so a
client that restarts its request timeout on progress never gives up on a check that is moving.
Once a check is done and no other climbs, the server starts a judge for that problem's next
check (rung.spare_judges), which imports torch while the agent writes its next version.
Resources name what an agent may want to read without a tool call: the workspace's problems and
runs (`rung://problems`, `rung://problem/{name}`, `rung://runs`, `rung://run/{run}`); the prompt
`optimize` starts an agent on a problem the way rung expects it to work.

The protocol owns this process's stdout. Judges and solution processes write theirs to log files under `.rung/`, the
controller prints nothing, and while it serves the SDK points file descriptor 1 at stderr, so a
stray print lands there and never on the wire.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import inspect
import threading
from collections.abc import Callable
from importlib.metadata import version as package_version
from pathlib import Path
from typing import Any

from rung import api, mcp_resources, views
from rung.artifact_pages import MAX_ARTIFACT_BYTES, read_page
from rung.errors import RungError, UsageError
from rung.problem_data import problem_name
from rung.spare_judges import SpareJudges
from rung.spec import Run, dumps
from rung.store import find_workspace

try:
    import anyio
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.types import CallToolResult, TextContent

    from rung.mcp_progress import CheckProgress, follow  # anyio comes with the SDK
except ImportError:
    raise UsageError("rung mcp needs the mcp package: pip install 'rung[mcp]'") from None

HISTORY_PAGE = 20  # versions per history page unless asked for more
MAX_HISTORY_PAGE = 200

INSTRUCTIONS = """\
rung checks GPU kernel versions. `check` climbs the ladder (load, compile, run, guard, correct,
scale, bench, roofline, dump, trace, profile) for solution files of a problem and stores each run;
`show`, `history`, `diff` and `bench`/`dump`/`profile` read stored runs; `read_artifact` reads the
files a run kept under .rung/runs/<id>/. Every answer is the JSON of the matching `rung ... --json`
command. A fast but wrong kernel is worthless: only a verified version (`"ok": true`, `"outcome":
"verified"`: every rung that decides correctness ran and passed) is an improvement; one that
failed or could not be checked here (`"outcome": "unverified"`, `why` says what did not run) is not.
"""


class Climbing:
    """How many checks are climbing now, across the server's worker threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._count = 0

    def __enter__(self) -> None:
        with self._lock:
            self._count += 1

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._count -= 1

    def idle(self) -> bool:
        with self._lock:
            return self._count == 0


def build(workspace: Path) -> MCPServer:
    """The server for one workspace: its tools read and write `workspace/.rung/`."""
    root = workspace.resolve()
    server: MCPServer = MCPServer(
        "rung", instructions=INSTRUCTIONS, version=package_version("rung"), log_level="WARNING"
    )
    # A judge per problem started after each check, while the agent writes its next version, so
    # the next check of that problem starts with torch imported; none while another check climbs
    # (its import would share the CPU with that check's timing).
    spares = SpareJudges(root / ".rung" / "scratch")
    climbing = Climbing()
    atexit.register(spares.close)

    def tool(fn: Callable[..., Any]) -> None:
        """Register `fn` (its name, docstring and arguments; sync, which the SDK runs in a worker
        thread, or async) with a RungError as a tool error."""
        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def answer_async(*args: object, **kwargs: object) -> CallToolResult:
                try:
                    return _result(await fn(*args, **kwargs), False)
                except RungError as e:
                    return _result(str(e), True)

            server.add_tool(answer_async, structured_output=False)
            return

        @functools.wraps(fn)
        def answer(*args: object, **kwargs: object) -> CallToolResult:
            try:
                return _result(fn(*args, **kwargs), False)
            except RungError as e:
                return _result(str(e), True)

        server.add_tool(answer, structured_output=False)

    def here(path: str) -> Path:
        return root / path

    @tool
    async def check(problem: str, solutions: list[str], ctx: Context) -> str:
        """Climb the ladder for each solution file of a problem folder and store the runs; the JSON of
        `rung check PROBLEM SOLUTION... --json`: every rung's status, message, figures, artifacts;
        per solution `outcome` (verified, failed, unverified) and `ok`, true only when verified.
        Progress is reported per rung and per case while it climbs."""
        progress = CheckProgress(root / ".rung", len(solutions))
        climbed: list[Run] = []
        failed: list[RungError] = []

        def climb() -> None:
            with climbing:
                try:
                    climbed.extend(
                        api.check(
                            here(problem),
                            [here(s) for s in solutions],
                            root,
                            on_rung=progress.rung_done,
                            spares=spares,
                        )
                    )
                except RungError as e:
                    failed.append(e)
            if climbed and climbing.idle():
                spares.ready(here(problem))

        async with anyio.create_task_group() as group:
            group.start_soon(follow, progress, ctx.report_progress)
            await anyio.to_thread.run_sync(climb)
            group.cancel_scope.cancel()
        last = progress.next_update(0.0)  # what ended since the last poll: the check's last rungs
        if last is not None:
            await ctx.report_progress(last[0], progress.total, last[1])
        if failed:
            raise failed[0]
        return dumps(views.check_doc(climbed))

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
        store widths, TMA, local memory, the source lines that became the most instructions) and
        the files kept, among them `<build>.sass_src.txt`, the SASS under each source line, to read
        with read_artifact (`rung show RUN --rung dump --json`)."""
        return dumps(views.rung_doc(api.show(run, root), "dump"))

    @tool
    def history(problem: str, offset: int = 0, limit: int = HISTORY_PAGE) -> str:
        """Stored versions of a problem (its folder or its name), oldest first, a page at a time:
        each one's parent run, verdict (and why it failed), median ms per benchmark case, speedups
        over the reference and its parent, % of roofline (`rung history PROBLEM --json`, paged:
        `total`, `next_offset` to ask for the next page; each run's rungs are in `show`)."""
        if offset < 0 or not 0 < limit <= MAX_HISTORY_PAGE:
            raise UsageError(f"history pages from offset >= 0, 1 to {MAX_HISTORY_PAGE} versions at a time")
        runs = api.history(here(problem), root)
        return dumps(views.history_doc(problem_name(here(problem)), runs, offset, limit))

    @tool
    def show(run: int) -> str:
        """One stored run in full: every rung, its figures and artifacts, and its lineage (the
        versions it came from, nearest first) (`rung show RUN --json`)."""
        chain = api.lineage(run, root)
        return dumps(views.show_doc(chain[0], chain))

    @tool
    def diff(run_a: int, run_b: int) -> str:
        """Two stored runs compared: the unified diff of their sources, the rungs whose status
        changed, each benchmark case's median a → b with the ratio (`rung diff A B --json`)."""
        return dumps(api.diff(run_a, run_b, root))

    @tool
    def problem_info(problem: str) -> str:
        """What a problem holds: its docstring, test and benchmark cases, tolerance, whether it has a
        cost model (`rung problem PROBLEM --json`)."""
        return dumps(views.problem_doc(api.problem(here(problem))))

    @tool
    def context_search(query: str, limit: int = 8) -> str:
        """The best snippets of indexed documentation and example code for free text (`tl.dot`,
        `num_warps`, `cp.async.bulk`), with file and line (`rung context search QUERY --json`)."""
        return dumps(views.context_doc(query, api.context_search(query, limit, root)))

    @tool
    def read_artifact(path: str, offset: int = 0, length: int = MAX_ARTIFACT_BYTES) -> str:
        """A page of a text file inside the workspace, such as an artifact a run kept under
        .rung/runs/<id>/ (PTX, SASS, SASS with source, logs, result.json): JSON with `text`,
        `total_bytes` and `next_offset` (null at the end; pass it as `offset` for the next page).
        `offset` and `length` are bytes, `length` at most 200000. Paths outside the workspace are
        refused."""
        return dumps(read_page(root, path, offset, length))

    mcp_resources.add(server, root)
    return server


def _result(text: str, failed: bool) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=failed)


def serve(workspace: Path | None) -> None:
    """Serve the workspace's tools on stdin and stdout until the client closes stdin."""
    server = build(workspace or find_workspace())
    with contextlib.suppress(KeyboardInterrupt):
        server.run("stdio")
