"""Which timed calls have their outputs checked: a reservoir over every timed call, drawn from a
key the judge makes with its own randomness for each case.

The solution process fills the reservoir as calls return (`draw`, call by call); the judge,
holding the same key, recomputes which call must sit in each slot once it knows how many calls
were timed (`reservoir`) and fails a case whose copies came from other calls. So no random source
in the solution's process decides what is checked: a solution that replaces `random`, `secrets`
or `os.urandom` (a reservoir drawn from them picked only the first calls, on an H100) changes
nothing, and one that steers the copies some other way is caught by the judge's recount. The hash
is taken from the interpreter when this module is imported, before any solution is.
"""

from __future__ import annotations

import hashlib

_blake2b = hashlib.blake2b  # a C type: its methods cannot be replaced, only the module's name
_from_bytes = int.from_bytes


def draw(key: bytes, n: int) -> int:
    """Where call n (0-based, n >= the slots) goes in the reservoir: uniform in [0, n]; a slot
    where below the number of slots, else nowhere (Algorithm R with the key's draws)."""
    digest = _blake2b(n.to_bytes(8, "little"), key=key, digest_size=8).digest()
    return _from_bytes(digest, "little") % (n + 1)


def slot_of(key: bytes, n: int, slots: int) -> int | None:
    """The slot call n's output is copied into, or None: the first calls fill the slots in turn."""
    if n < slots:
        return n
    k = draw(key, n)
    return k if k < slots else None


def graph_call(key: bytes, calls: int) -> int:
    """Which of the `calls` calls captured in bench's CUDA graph has its output checked after the
    replays (the graph pass produces a figure too: a capture-aware solution did less work there)."""
    digest = _blake2b(b"graph" + calls.to_bytes(8, "little"), key=key, digest_size=8).digest()
    return _from_bytes(digest, "little") % max(calls, 1)


def reservoir(key: bytes, slots: int, calls: int) -> dict[int, int]:
    """Slot -> the call whose output that slot holds after `calls` timed calls."""
    held: dict[int, int] = {}
    for n in range(calls):
        k = slot_of(key, n, slots)
        if k is not None:
            held[k] = n
    return held


def pass_slots(name: str, slots: int) -> list[int]:
    """The slots of one timed pass: every pass that gives a figure has its calls checked, so a
    solution that does less work under the profiler is caught there. The CUPTI pass (20 to 100
    calls against the events pass's thousands) has the last slot to itself."""
    return [slots - 1] if name == "cupti" else list(range(slots - 1))


def pass_key(key: bytes, name: str) -> bytes:
    return key if name == "events" else key + name.encode()


def drawn(key: bytes, slots: int, samples: int, cupti_calls: int) -> dict[int, int]:
    """Slot -> the call each slot must hold after both passes: the events pass's calls 0 to
    samples - 1, then the CUPTI pass's, numbered on from there."""
    held: dict[int, int] = {}
    for name, first, calls in (("events", 0, samples), ("cupti", samples, cupti_calls)):
        own = pass_slots(name, slots)
        for k, n in reservoir(pass_key(key, name), len(own), calls).items():
            held[own[k]] = first + n
    return held
