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


def reservoir(key: bytes, slots: int, calls: int) -> dict[int, int]:
    """Slot -> the call whose output that slot holds after `calls` timed calls."""
    held: dict[int, int] = {}
    for n in range(calls):
        k = slot_of(key, n, slots)
        if k is not None:
            held[k] = n
    return held
