"""The judge's handle on the solution process: start it confined, place inputs, ask for calls.

The solution process is a child of the judge in a session of its own, with an environment from
an allow-list, its output through capped logs, and no way back but JSON answers on a private
pipe. The judge is its subreaper: whatever it forks, double-forked or not, is killed with it. A
crash, a hang or an exit of the solution process raises `SolutionCrashed` or `SolutionTimedOut`
(the rung it was on ends ERROR or TIMEOUT); the next request starts a fresh one.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rung.common.channel import Channel, ChannelClosed, ChannelTimeout
from rung.common.logcap import CappedLog, tail_text
from rung.common.messages import CallReport
from rung.errors import WorkerError

if TYPE_CHECKING:  # torch is imported where buffers are handled: starting a process needs none
    import torch

    from rung.common.shm import TensorSpec

START_TIMEOUT_S = 600.0  # importing torch on a loaded machine; not part of any rung's limit


class SolutionCrashed(WorkerError):
    def __init__(self, how: str, stderr_tail: str) -> None:
        super().__init__(how)
        self.how, self.stderr_tail = how, stderr_tail


class SolutionTimedOut(WorkerError):
    def __init__(self, seconds: float, stderr_tail: str) -> None:
        super().__init__(f"no answer within {seconds:g} s")
        self.seconds, self.stderr_tail = seconds, stderr_tail


@dataclass
class Placed:
    """Inputs living in the solution process: the tree it decodes, and the judge's view of each
    tensor leaf (the same memory, mapped here), in `leaves` order."""

    tree: Any
    ids: list[int] = field(default_factory=list)
    local: list[torch.Tensor] = field(default_factory=list)


class SolutionProcess:
    def __init__(self, start: dict[str, Any], log_dir: Path) -> None:
        self.start = start
        self.log_dir = log_dir
        self.proc: subprocess.Popen[bytes] | None = None
        self.channel: Channel | None = None
        self.token = ""
        self.ready: dict[str, Any] = {}
        self.side: dict[str, Any] = {}  # the format's part (entry point, reference names), sent once ready
        self._unused: list[int] = []  # buffers to free, sent with the next request
        self.last_harm: dict[str, Any] = {}

    @property
    def stderr_path(self) -> Path:
        return self.log_dir / "solution.stderr.log"

    def launch(self) -> None:
        """Start the process without waiting for it: it imports torch and confines itself while
        the judge gets on with its own work. The first request waits for it to be ready."""
        if self.proc is None or self.proc.poll() is not None:
            self._launch()

    def _launch(self) -> None:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        # A folder of shared buffers per process: a crashed one's leftovers never collide.
        self.shm_dir = Path("/dev/shm") / f"rung-{os.getpid()}-{secrets.token_hex(6)}"
        self.start["shm_dir"] = str(self.shm_dir)
        for folder in (self.start["scratch"], self.shm_dir, *self.start.get("caches", [])):
            Path(folder).mkdir(parents=True, exist_ok=True)
        req_r, req_w = os.pipe()
        res_r, res_w = os.pipe()
        self._logs = [CappedLog(self.log_dir / "solution.stdout.log"), CappedLog(self.stderr_path)]
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "rung.solution.main", str(req_r), str(res_w)],
            pass_fds=(req_r, res_w),
            stdin=subprocess.DEVNULL,
            stdout=self._logs[0].fileno(),
            stderr=self._logs[1].fileno(),
            env=self.start["env"],
            cwd=self.start["scratch"],
            start_new_session=True,
        )
        for log in self._logs:
            log.close_writer()
        os.close(req_r)
        os.close(res_w)
        self.channel = Channel(res_r, req_w)
        self.token = secrets.token_hex(16)
        self.channel.send({k: v for k, v in self.start.items() if k != "env"} | {"token": self.token})
        self.ready = {}

    def _spawn(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            self._launch()
        if not self.ready:
            self.ready = self._receive(START_TIMEOUT_S)
            assert self.channel is not None
            self.channel.send({"op": "configure", "params": self.side})
            self._receive(START_TIMEOUT_S)

    def request(self, op: str, params: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        """Ask for `op`; its answer, or SolutionCrashed / SolutionTimedOut."""
        if self.proc is None or self.proc.poll() is not None or not self.ready:
            self._spawn()
        assert self.channel is not None
        try:
            self.channel.send({"op": op, "params": params, "free": self._unused})
            self._unused = []
        except (BrokenPipeError, OSError):
            raise self._crashed() from None
        answer = self._receive(timeout_s)
        self.last_harm = dict(answer.get("harm") or {})
        return answer

    def _receive(self, timeout_s: float) -> dict[str, Any]:
        assert self.channel is not None and self.proc is not None
        try:
            reply = self.channel.recv(timeout_s)
        except ChannelTimeout:
            self.kill()
            raise SolutionTimedOut(timeout_s, self.stderr_tail()) from None
        except (ChannelClosed, ValueError):
            raise self._crashed() from None
        if (
            not isinstance(reply, dict)
            or reply.get("token") != self.token
            or not isinstance(reply.get("result"), dict)
        ):
            self.kill()
            raise SolutionCrashed("an answer without the solution process's token arrived", "")
        return dict(reply["result"])

    def _crashed(self) -> SolutionCrashed:
        assert self.proc is not None
        try:
            code = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            code = None
        self.kill()
        return SolutionCrashed(describe_exit(code), self.stderr_tail())

    # Inputs and outputs -------------------------------------------------------------------

    def allocate(
        self, specs: list[TensorSpec], timeout_s: float = 120
    ) -> tuple[list[int], list[torch.Tensor]]:
        """New buffers in the solution process, and the judge's view of each."""
        from rung.common.shm import open_buffer

        if not specs:
            return [], []
        answer = self.request("alloc", {"specs": [s.to_dict() for s in specs]}, timeout_s)
        made = answer["buffers"]
        ids = [int(key) for key, _ in made]
        return ids, [open_buffer(spec, handle) for spec, (_, handle) in zip(specs, made, strict=True)]

    def place(self, inputs: Any) -> Placed:
        """`inputs` copied into new buffers of the solution process."""
        from rung.common.shm import TensorSpec
        from rung.common.trees import encode, leaves

        tensors = leaves(inputs)
        ids, local = self.allocate([TensorSpec.of(t) for t in tensors])
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

    def free(self, ids: list[int]) -> None:
        """Buffers no longer needed: freed with the next request (no round trip of their own)."""
        if self.proc is not None and self.proc.poll() is None:
            self._unused.extend(ids)

    def call(
        self, placed: Placed, expected: list[TensorSpec], timeout_s: float, suppress: bool = False
    ) -> tuple[CallReport, list[torch.Tensor | None]]:
        """One call: the report, and a private copy of each output that fit its slot."""
        slot_ids, slots = self.allocate(expected)
        try:
            answer = self.request(
                "call", {"inputs": placed.tree, "slots": slot_ids, "suppress": suppress}, timeout_s
            )
            report = CallReport.from_dict({k: v for k, v in answer.items() if k not in ("harm", "seconds")})
            outs: list[torch.Tensor | None] = []
            for j, view in enumerate(slots):
                meta = report.outputs[j] if j < len(report.outputs) else None
                outs.append(view.clone() if meta is not None and meta.copied else None)
        finally:
            del slots
            self.free(slot_ids)
        return report, outs

    def read(self, placed: Placed) -> list[torch.Tensor]:
        """Private copies of what the placed buffers hold now."""
        return [v.clone() for v in placed.local]

    # Ending ------------------------------------------------------------------------------

    def stderr_tail(self) -> str:
        return tail_text(self.stderr_path)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self._forget()

    def _forget(self) -> None:
        self.ready = {}
        self._unused = []
        if getattr(self, "shm_dir", None) is not None:
            shutil.rmtree(self.shm_dir, ignore_errors=True)
        if self.channel is not None:
            self.channel.close()
        for log in getattr(self, "_logs", []):
            log.close(timeout_s=2)
        self.channel = None
        self.proc = None

    def close(self) -> None:
        """End the solution process: politely (closing its request pipe), then by force."""
        if self.proc is not None and self.proc.poll() is None and self.channel is not None:
            self.channel.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=5)
        self.kill()


def _sync(views: list[torch.Tensor]) -> None:
    if any(v.is_cuda for v in views):
        import torch

        torch.cuda.synchronize()


def describe_exit(code: int | None) -> str:
    if code is None:
        return "the solution process stopped answering and was killed"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        hint = " (out of memory?)" if name == "SIGKILL" else ""
        return f"the solution process was killed by {name}{hint}"
    return f"the solution process exited with code {code} before answering"
