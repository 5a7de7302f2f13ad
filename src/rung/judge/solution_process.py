"""The judge's handle on the solution process: start it confined, place inputs, ask for calls.

The solution process is forked by the judge's fork server (`fork_server`; a fresh interpreter
where it cannot be, the record says which) into a session of its own, with an environment from
an allow-list, its output through capped logs, and no way back but JSON answers on a private
pipe. The judge is its subreaper: whatever it forks, double-forked or not, is killed with it. A
crash, a hang or an exit of the solution process raises `ChildCrashed` or `ChildTimedOut`
(the rung it was on ends ERROR or TIMEOUT); the next request starts a fresh one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rung.common.child import Child, ChildCrashed, ChildTimedOut
from rung.common.messages import CallReport, FormatSide, SolutionStart
from rung.judge import fork_server

if TYPE_CHECKING:  # torch is imported where buffers are handled: starting a process needs none
    import torch

    from rung.common.shm import TensorSpec

START_TIMEOUT_S = 600.0  # importing torch on a loaded machine; not part of any rung's limit
KEEP_BYTES = 256 * 2**20  # kept for reuse between calls: small cases' inputs and output slots


@dataclass
class Placed:
    """Inputs living in the solution process: the tree it decodes, and the judge's view of each
    tensor leaf (the same memory, mapped here), in `leaves` order."""

    tree: Any
    ids: list[int] = field(default_factory=list)
    local: list[torch.Tensor] = field(default_factory=list)


class SolutionProcess:
    def __init__(self, start: SolutionStart, env: dict[str, str], log_dir: Path) -> None:
        self.start, self.env = start, env
        self.child = Child(
            "rung.solution.main", "solution process", log_dir, "solution", fork_server.shared()
        )
        self.ready: dict[str, Any] = {}
        self.side: FormatSide | None = None  # the format's part, sent once the process is ready
        self.last_harm: dict[str, Any] = {}
        self._unused: list[int] = []  # buffers to free, sent with the next request
        self._kept: dict[TensorSpec, list[tuple[int, torch.Tensor]]] = {}  # buffers to use again
        self._kept_bytes = 0

    @property
    def pid(self) -> int | None:
        return self.child.proc.pid if self.child.alive and self.child.proc is not None else None

    def launch(self) -> None:
        """Start the process without waiting for it: it imports torch and confines itself while
        the judge gets on with its own work. The first request waits for it to be ready."""
        if self.child.alive:
            return
        self._let_go()
        for folder in (self.start.scratch, *self.start.caches):
            Path(folder).mkdir(parents=True, exist_ok=True)
        # Started in a folder no solution can write (it enters its scratch once confined).
        self.child.launch(self.start.to_dict(), self.env, "/")

    def _ready(self) -> None:
        if not self.child.alive:
            self.launch()
        if not self.ready:
            self.ready = self.child.receive(START_TIMEOUT_S)
            confinement = self.ready.get("confinement")  # how it started is the judge's word
            self.ready["confinement"] = {
                **(confinement if isinstance(confinement, dict) else {}),
                "start": self.child.started,
            }
            self.child.send({"op": "configure", "params": (self.side or FormatSide()).to_dict()})
            self.child.receive(START_TIMEOUT_S)

    def request(self, op: str, params: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        """Ask for `op`; its answer, or ChildCrashed / ChildTimedOut (the process is then gone,
        and the next request starts a fresh one)."""
        try:
            self._ready()
            self.child.send({"op": op, "params": params, "free": self._unused})
            self._unused = []
            answer = self.child.receive(timeout_s)
        except (ChildCrashed, ChildTimedOut):
            self._let_go()
            raise
        self.last_harm = dict(answer.get("harm") or {})
        return answer

    # Inputs and outputs -------------------------------------------------------------------

    def allocate(
        self, specs: list[TensorSpec], timeout_s: float = 120, fresh: bool = False
    ) -> tuple[list[int], list[torch.Tensor]]:
        """Buffers in the solution process (kept ones first unless `fresh`, the rest made in one
        request), and the judge's view of each."""
        from rung.common.shm import BufferRefused, open_buffer

        ids: list[int] = [-1] * len(specs)
        views: list[Any] = [None] * len(specs)
        missing = []
        for k, spec in enumerate(specs):
            kept = None if fresh else self._kept.get(spec)
            if kept:
                ids[k], views[k] = kept.pop()
                self._kept_bytes -= spec.nbytes
            else:
                missing.append(k)
        if missing:
            answer = self.request("alloc", {"specs": [specs[k].to_dict() for k in missing]}, timeout_s)
            pid = self.pid
            try:
                for k, (key, handle) in zip(missing, answer["buffers"], strict=True):
                    ids[k], views[k] = int(key), open_buffer(specs[k], handle, pid or 0)
            except (BufferRefused, KeyError, TypeError, ValueError) as e:
                self.child.kill()
                self._let_go()
                raise ChildCrashed(
                    f"the solution process handed over a buffer the judge refuses: {e}", ""
                ) from None
        return ids, views

    def place(self, inputs: Any, fresh: bool = False) -> Placed:
        """`inputs` copied into buffers of the solution process; with `fresh`, new ones only, at
        addresses no kept buffer has (the guard's test for a cache keyed by address)."""
        from rung.common.shm import TensorSpec
        from rung.common.trees import encode, leaves

        tensors = leaves(inputs)
        ids, local = self.allocate([TensorSpec.of(t) for t in tensors], fresh=fresh)
        for view, t in zip(local, tensors, strict=True):
            if t.device.type != "meta":
                view.copy_(t)
        position = {id(t): k for k, t in enumerate(tensors)}
        tree = encode(inputs, lambda t: ids[position[id(t)]])
        _sync(local)
        return Placed(tree, ids, local)

    def refill(self, placed: Placed, inputs: Any) -> None:
        """New values written into the same buffers (same addresses in the solution process)."""
        from rung.common.trees import leaves

        for view, t in zip(placed.local, leaves(inputs), strict=True):
            view.copy_(t)
        _sync(placed.local)

    def free(self, ids: list[int], views: list[torch.Tensor]) -> None:
        """Buffers no longer needed: kept for the next call that needs their shape (up to
        KEEP_BYTES: each new one costs a request and, on a GPU, an IPC mapping), else freed with
        the next request."""
        from rung.common.shm import TensorSpec

        if not self.child.alive:
            return
        for key, view in zip(ids, views, strict=True):
            spec = TensorSpec.of(view)
            if spec.device != "meta" and self._kept_bytes + spec.nbytes <= KEEP_BYTES:
                self._kept.setdefault(spec, []).append((key, view))
                self._kept_bytes += spec.nbytes
            else:
                self._unused.append(key)

    def release(self, timeout_s: float = 120) -> None:
        """The buffers freed since the last request, freed now (they go with the next request),
        and torch's cache of them handed back to the GPU: before the judge reads what is free."""
        if self._unused and self.child.alive:
            self.request("release", {}, timeout_s)

    def call(
        self,
        placed: Placed,
        expected: list[TensorSpec],
        timeout_s: float,
        suppress: bool = False,
        kernel_names: bool = False,
    ) -> tuple[CallReport, list[torch.Tensor | None]]:
        """One call: the report (naming the kernels it ran, where asked), and a private copy of
        each output that fit its slot."""
        slot_ids, slots = self.allocate(expected)
        try:
            params = {
                "inputs": placed.tree,
                "slots": slot_ids,
                "suppress": suppress,
                "kernel_names": kernel_names,
            }
            answer = self.request("call", params, timeout_s)
            report = CallReport.from_dict({k: v for k, v in answer.items() if k not in ("harm", "seconds")})
            outs: list[torch.Tensor | None] = []
            for j, view in enumerate(slots):
                meta = report.outputs[j] if j < len(report.outputs) else None
                outs.append(view.clone() if meta is not None and meta.copied else None)
        finally:
            self.free(slot_ids, slots)
        return report, outs

    def read(self, placed: Placed) -> list[torch.Tensor]:
        """Private copies of what the placed buffers hold now."""
        return [v.clone() for v in placed.local]

    # Ending ------------------------------------------------------------------------------

    def stderr_tail(self) -> str:
        return self.child.stderr_tail()

    def _let_go(self) -> None:
        """Forget what belonged to a process that is gone: its buffers, its readiness."""
        self.ready, self._unused, self._kept, self._kept_bytes = {}, [], {}, 0

    def close(self) -> None:
        # Killed, not asked to exit: nothing it does after its last answer is heard, and its
        # interpreter's teardown (torch's, CUDA's) is time a check would otherwise wait out.
        self.child.kill()
        self._let_go()


def _sync(views: list[torch.Tensor]) -> None:
    if any(v.is_cuda for v in views):
        import torch

        torch.cuda.synchronize()
