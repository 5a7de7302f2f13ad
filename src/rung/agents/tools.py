"""The tools a language model may call while it writes a version, as a kernel engineer works:
build a draft and read its registers and SASS facts (`compile`: load, compile and dump, seconds,
no GPU), climb the whole ladder on it (`check`), read what a run kept a page at a time
(`read_artifact`), search the indexed documentation (`search_context`), compare two versions
(`diff`), list the versions so far (`history`) and read one in full (`show`).

A draft the model builds or checks climbs exactly as a candidate does: written under
`.rung/versions/<problem>/` by its content hash, run by the runner in a judge and a confined
solution process, stored with its parent. This process, which holds the store and the key,
never runs it. Every call is answered in text (a refusal, such as a path outside the workspace,
too), so the model reads why and goes on; each is kept as a `ToolCall` with its seconds and the
run it gave. Each call opens its own store: conversations run in threads of their own.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rung import api, runner, views
from rung.agents import LoopState, ToolCall
from rung.agents.prompt import ladder_text
from rung.agents.providers import ToolRequest, ToolSpec
from rung.artifact_pages import MAX_ARTIFACT_BYTES, read_page
from rung.errors import RungError
from rung.spec import Run, dumps
from rung.store import Store

COMPILE_ONLY = ("load", "compile", "dump")  # the rungs that need no GPU and run no kernel
PAGE_BYTES = 20_000  # read_artifact's page unless the model asks for another length
HISTORY_PAGE = 10


def _schema(required: list[str], **properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required}


_SOURCE = {"type": "string", "description": "a complete solution file"}
_RUN = {"type": "integer", "description": "a run id (`run N` in a ladder)"}

TOOLS = [
    ToolSpec(
        "compile",
        "Build a draft without running it (rungs load, compile, dump; seconds, no GPU): compile "
        "errors with their lines, registers, shared and local memory, spills, SASS facts "
        "(tensor-core instructions, load widths, TMA), and the files kept (PTX, SASS).",
        _schema(["source"], source=_SOURCE),
    ),
    ToolSpec(
        "check",
        "Climb the whole ladder on a draft: correctness on every case, anti-cheat guards, timing "
        "and roofline where a GPU is. A draft you checked and then answer with is not climbed again.",
        _schema(["source"], source=_SOURCE),
    ),
    ToolSpec(
        "read_artifact",
        "A page of a file a run kept (path relative to the workspace, as a ladder lists them: "
        ".rung/runs/<id>/...: PTX, SASS, SASS under source lines, logs, profile reports). Returns "
        "`text`, `total_bytes` and `next_offset` (null at the end).",
        _schema(
            ["path"],
            path={"type": "string"},
            offset={"type": "integer", "description": "byte offset, 0 first"},
            length={"type": "integer", "description": f"bytes, at most {MAX_ARTIFACT_BYTES}"},
        ),
    ),
    ToolSpec(
        "search_context",
        "The best snippets of indexed documentation and example kernels for free text "
        "(`tl.dot`, `num_warps`, `cp.async.bulk`), with file and line.",
        _schema(["query"], query={"type": "string"}, limit={"type": "integer"}),
    ),
    ToolSpec(
        "diff",
        "Two runs compared: the unified diff of their sources, the rungs whose status changed, "
        "each benchmark case's median a -> b.",
        _schema(["run_a", "run_b"], run_a=_RUN, run_b=_RUN),
    ),
    ToolSpec(
        "history",
        "The problem's versions so far, oldest first, a page at a time: parent, verdict and why it "
        "failed, ms per case, speedups, % of roofline.",
        _schema([], offset={"type": "integer"}, limit={"type": "integer"}),
    ),
    ToolSpec(
        "show",
        "One run's ladder in full: every rung's status, message, figures and the files it kept.",
        _schema(["run"], run=_RUN),
    ),
]


class Toolbox:
    """The tools for one round of one loop: the problem, device and parent of that round."""

    def __init__(self, state: LoopState, workspace: Path, versions: Path) -> None:
        self.state, self.workspace, self.versions = state, workspace, versions
        self.checked: dict[str, int] = {}  # source hash -> the run of a full check of it
        self._tools: dict[str, Callable[..., str]] = {
            "compile": lambda source: self._climb(source, COMPILE_ONLY),
            "check": lambda source: self._climb(source, None),
            "read_artifact": self._read,
            "search_context": self._search,
            "diff": lambda run_a, run_b: dumps(api.diff(run_a, run_b, self.workspace)),
            "history": self._history,
            "show": self._show,
        }
        self._last_run: int | None = None

    def call(self, request: ToolRequest) -> tuple[str, bool, ToolCall]:
        """(the result text, whether the tool refused, the record of the call)."""
        t0 = time.monotonic()
        self._last_run = None
        tool = self._tools.get(request.name)
        try:
            if tool is None:
                raise RungError(f"no tool {request.name!r} (tools: {', '.join(self._tools)})")
            text, refused = tool(**request.args), False
        except TypeError as e:  # arguments the tool does not take
            text, refused = f"{request.name}: bad arguments: {e}", True
        except RungError as e:
            text, refused = str(e), True
        kept = {k: _short(v) for k, v in request.args.items()}
        record = ToolCall(
            request.name,
            kept,
            round(time.monotonic() - t0, 3),
            run=self._last_run,
            error=text if refused else "",
        )
        return text, refused, record

    def _climb(self, source: str, only: tuple[str, ...] | None) -> str:
        sha = hashlib.sha256(source.encode()).hexdigest()
        path = self.versions / f"{sha[:12]}.py"
        path.write_text(source)
        store = Store(self.workspace)
        try:
            run = runner.climb(
                store,
                self.state.problem,
                self.state.device,
                path,
                parent=self.state.best.run.solution.sha256,
                only=only,
            )
        finally:
            store.close()
        self._last_run = run.id
        if only is None and run.finished is not None:
            self.checked[sha] = run.id
        return _with_files(run, self.workspace)

    def _read(self, path: str, offset: int = 0, length: int = PAGE_BYTES) -> str:
        return dumps(read_page(self.workspace.resolve(), path, offset, length))

    def _search(self, query: str, limit: int = 4) -> str:
        if not (self.workspace / ".rung" / "context.db").is_file():
            return "nothing is indexed in this workspace (rung context add PATH indexes documentation)"
        return dumps(views.context_doc(query, api.context_search(query, min(limit, 8), self.workspace)))

    def _history(self, offset: int = 0, limit: int = HISTORY_PAGE) -> str:
        runs = api.history(self.state.problem.path, self.workspace)
        return dumps(views.history_doc(self.state.problem.name, runs, max(offset, 0), min(max(limit, 1), 50)))

    def _show(self, run: int) -> str:
        return _with_files(api.show(run, self.workspace), self.workspace)


def _with_files(run: Run, workspace: Path) -> str:
    """The run's ladder as the prompt shows it, then the files it kept, relative to the workspace."""
    root = workspace.resolve()
    files = [
        str(Path(a).resolve().relative_to(root)) if Path(a).resolve().is_relative_to(root) else a
        for r in run.rungs
        for a in r.artifacts
    ]
    return ladder_text(run) + ("\nfiles:\n" + "\n".join(f"  {f}" for f in files) if files else "")


def _short(value: Any) -> Any:
    """An argument as the ledger keeps it: a source by its hash and size, not its text."""
    if isinstance(value, str) and len(value) > 200:
        return {"sha256": hashlib.sha256(value.encode()).hexdigest(), "chars": len(value)}
    return value
