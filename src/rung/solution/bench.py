"""bench, the solution process's part: time the solution on the input sets the judge placed,
and copy the outputs of randomly chosen timed calls into the judge's slots.

Which timed calls are copied is a reservoir over each timed pass's calls (the events pass's, the
CUPTI pass's: a solution that does less work under the profiler is caught there), drawn from a key the judge sent with its own randomness (`rung.common.checked_calls`), never from
a random source of this process; the judge recounts the reservoir from the key and fails copies
from any other call. The copy is queued in the call's stream right after its end event: it
is not timed, and it sees the output as it was when the call ended, so work still running
elsewhere after the call returned is not in it. The judge compares every copy with its own
reference for that call's input set. The CUDA graph's figure is checked the same way: after its
replays, the output of one captured call the key draws is copied into a slot of its own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from rung.common.checked_calls import graph_call, pass_key, pass_slots, slot_of
from rung.common.measure import guarded, measure
from rung.common.shm import TensorSpec
from rung.common.timing import Flusher, Policy, graph_timed
from rung.common.trees import tensor_list
from rung.solution.harness import Harness, kind_of


class Snapshots:
    """A reservoir of timed calls whose outputs are copied into the judge's slots."""

    def __init__(self, harness: Harness, slots: list[list[int]], sets: int, key: bytes) -> None:
        self.slots = [[harness.tensor(k) for k in ids] for ids in slots]
        self.key = key
        self.sets = sets
        self.seen = {"events": 0, "cupti": 0}
        self.taken: dict[int, dict[str, Any]] = {}
        self.last: Any = None

    def after(self, i: int) -> None:
        """After call i of the events pass."""
        self._take("events", i)

    def profiled(self, i: int) -> None:
        """After call i of the CUPTI pass."""
        self._take("cupti", i)

    def _take(self, name: str, i: int) -> None:
        n = self.seen[name]
        self.seen[name] += 1
        own = pass_slots(name, len(self.slots))
        k = slot_of(pass_key(self.key, name), n, len(own))
        if k is None:
            return
        slot = own[k]
        self.taken[slot] = {
            "slot": slot,
            "call": i,
            "pass": name,
            "copied": copy_into(self.last, self.slots[slot]),
            "returned": kind_of(self.last),
        }


def copy_into(value: Any, targets: list[torch.Tensor]) -> bool:
    """Queue a copy of a call's outputs into the judge's slot; False (nothing copied) where they
    are not the slot's tensors."""
    outs = tensor_list(value)
    fits = outs is not None and len(outs) == len(targets)
    fits = fits and all(
        TensorSpec.of(o) == TensorSpec.of(t) for o, t in zip(outs or [], targets, strict=False)
    )
    if fits:
        with torch.no_grad():
            for o, t in zip(outs or [], targets, strict=False):
                t.copy_(o)
    return fits


class GraphShot:
    """The output of one call captured in the CUDA graph, drawn by the judge's key, after the replays."""

    def __init__(self, harness: Harness, slot: list[int], key: bytes) -> None:
        self.slot = [harness.tensor(k) for k in slot]
        self.key = key
        self.taken: dict[str, Any] = {}

    def __call__(self, calls: int, outputs: list[Any]) -> None:
        j = graph_call(self.key, calls)
        self.taken = {"call": j, "copied": copy_into(outputs[j], self.slot), "returned": kind_of(outputs[j])}


def bench(harness: Harness, warmup: Any, params: dict[str, Any]) -> dict[str, Any]:
    waited = warmup.wait() if warmup is not None else {}
    torch.cuda.empty_cache()  # what earlier rungs and cases left cached: the other process may need it
    sets = [harness.inputs(tree) for tree in params["sets"]]
    fn = harness.entry
    key = bytes.fromhex(params["check_key"])
    snapshots = Snapshots(harness, params["slots"], len(sets), key)
    graph_shot = GraphShot(harness, params.get("graph_slot") or [], key)

    def call(i: int) -> Any:
        snapshots.last = fn(*sets[i % len(sets)])
        return snapshots.last

    policy = Policy(**params["policy"])
    flush = Flusher()
    threads_before = harness.threads()
    try:
        figures = measure(
            call, policy, flush, Path(params["trace"]), snapshots.after, len(sets), snapshots.profiled
        )
        if figures["median_ms"] < float(params["graph_below_ms"]) and graph_shot.slot:
            figures["graph"] = guarded(
                lambda: graph_timed(call, figures["median_ms"], policy, flush, checked=graph_shot)
            )
            figures["graph"]["checked"] = graph_shot.taken
    except BaseException as e:
        return {"error": harness.where(e), "error_type": type(e).__name__}
    finally:
        snapshots.last = None
    torch.cuda.synchronize()
    figures["snapshots"] = sorted(snapshots.taken.values(), key=lambda s: s["slot"])
    figures["timed_calls"] = sum(snapshots.seen.values())
    new = [said for ident, said in harness.threads().items() if ident not in threads_before]
    figures["new_threads"], figures["new_thread_names"] = len(new), new[:5]
    figures["profiler_warmup"] = waited
    figures["l2_flush_bytes"] = flush.buffer.numel() * 4
    return figures
