"""bench, the solution process's part: time the solution on the input sets the judge placed,
and copy the outputs of randomly chosen timed calls into the judge's slots.

Which timed calls are copied is a reservoir over all timed calls (as many as there are slots),
drawn from a key the judge sent with its own randomness (`rung.common.checked_calls`), never from
a random source of this process; the judge recounts the reservoir from the key and fails copies
from any other call. The copy is queued in the call's stream right after its end event: it
is not timed, and it sees the output as it was when the call ended, so work still running
elsewhere after the call returned is not in it. The judge compares every copy with its own
reference for that call's input set.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from rung.common.checked_calls import slot_of
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
        self.seen = 0
        self.taken: dict[int, dict[str, Any]] = {}
        self.last: Any = None

    def after(self, i: int) -> None:
        n, self.seen = self.seen, self.seen + 1
        k = slot_of(self.key, n, len(self.slots))
        if k is None:
            return
        outs = tensor_list(self.last)
        targets = self.slots[k]
        fits = outs is not None and len(outs) == len(targets)
        fits = fits and all(
            TensorSpec.of(o) == TensorSpec.of(t) for o, t in zip(outs or [], targets, strict=False)
        )
        if fits:
            with torch.no_grad():
                for o, t in zip(outs or [], targets, strict=False):
                    t.copy_(o)
        self.taken[k] = {
            "slot": k,
            "call": i,
            "set": i % self.sets,
            "copied": fits,
            "returned": kind_of(self.last),
        }


def bench(harness: Harness, warmup: Any, params: dict[str, Any]) -> dict[str, Any]:
    waited = warmup.wait() if warmup is not None else {}
    torch.cuda.empty_cache()  # what earlier rungs and cases left cached: the other process may need it
    sets = [harness.inputs(tree) for tree in params["sets"]]
    fn = harness.entry
    snapshots = Snapshots(harness, params["slots"], len(sets), bytes.fromhex(params["check_key"]))

    def call(i: int) -> Any:
        snapshots.last = fn(*sets[i % len(sets)])
        return snapshots.last

    policy = Policy(**params["policy"])
    flush = Flusher()
    threads_before = harness.threads()
    try:
        figures = measure(call, policy, flush, Path(params["trace"]), after=snapshots.after, sets=len(sets))
        if figures["median_ms"] < float(params["graph_below_ms"]):
            figures["graph"] = guarded(lambda: graph_timed(call, figures["median_ms"], policy, flush))
    except BaseException as e:
        return {"error": harness.where(e), "error_type": type(e).__name__}
    finally:
        snapshots.last = None
    torch.cuda.synchronize()
    figures["snapshots"] = sorted(snapshots.taken.values(), key=lambda s: s["slot"])
    figures["timed_calls"] = snapshots.seen
    new = [said for ident, said in harness.threads().items() if ident not in threads_before]
    figures["new_threads"], figures["new_thread_names"] = len(new), new[:5]
    figures["profiler_warmup"] = waited
    figures["l2_flush_bytes"] = flush.buffer.numel() * 4
    return figures
