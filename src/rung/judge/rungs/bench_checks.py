"""bench's checks of a timing the judge did not watch: the timed calls' copied outputs against
their references, the choice of checked calls against the judge's key, the CUDA graph pass's
drawn call, and one input set changed after timing (a content cache). Each raises Failed
naming the first thing wrong."""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING, Any

import torch

from rung.common.checked_calls import drawn, graph_call
from rung.common.trees import leaves
from rung.judge.rungs.correct import judge_outputs
from rung.judge.rungs.outcome import Failed

if TYPE_CHECKING:
    from rung.judge.session import Session


def check_timed(
    session: Session,
    case: dict[str, Any],
    sets: list[Any],
    references: tuple[Any, dict[int, Any]],
    sol: dict[str, Any],
    drawn: tuple[list[Any], bytes],
    held_s: float,
) -> int:
    """What the judge checks of a timing it did not watch; Failed naming the first thing wrong.
    The number of timed calls whose output was checked. `drawn`: the slots the outputs were
    copied into, and the key that chose which calls."""
    slots, check_key = drawn
    where = f"benchmark case {case}"
    if "error" in sol:
        raise TimedCallRaised(f"{where}: while timed: {sol['error']}")
    harm = sol.get("harm") or {}
    if harm.get("patched"):
        raise Failed(f"{where}: timing functions replaced while timed: {', '.join(harm['patched'])}")
    if int(sol.get("new_threads", 0)) > 0:
        raise Failed(
            f"{where}: {sol['new_threads']} thread(s) left running after the timed calls: "
            + ", ".join(sol.get("new_thread_names", []))
        )
    if int(sol.get("outside_launches", 0)) > 0:
        raise Failed(
            f"{where}: device work launched outside any timed call "
            f"({sol['outside_launches']} launches: {', '.join(sol.get('outside_names', []))}): work left running "
            "on another thread after the call returned"
        )
    if int(sol.get("late_calls", 0)) > 0:
        raise Failed(
            f"{where}: {sol['late_calls']} timed call(s) still had work running after they returned "
            "(a stream the call never joined back)"
        )
    sampled_ms = float(sol.get("mean_ms", 0)) * int(sol.get("samples", 0))
    if sampled_ms / 1e3 > held_s:
        raise Failed(
            f"{where}: the solution process reported {sampled_ms / 1e3:.3f} s of timed calls within "
            f"{held_s:.3f} s of wall clock: its timer was forged"
        )
    samples = int(sol.get("samples", 0))
    if sol.get("cupti_error") and int(sol.get("timed_calls", -1)) > samples + int(sol.get("cupti_calls", 0)):
        # calls were made under the profiler, then the pass stopped: the solution's call raised there
        raise TimedCallRaised(
            f"{where}: while timed under the profiler (the CUPTI pass): {sol['cupti_error']}"
        )
    shots = sol.get("snapshots") or []
    if not shots:
        raise Failed(f"{where}: no timed call's output came back to be checked")
    # set 0's reference (the shapes are every set's), and the float64 references made so far.
    # One float64 reference is alive at a time, shots checked set by set: a float64 copy of
    # KernelBench's 6 GiB outputs is 12 GiB, and an 80 GB GPU holds the solution process too.
    expected, precise = references
    if any(not 0 <= int(x["slot"]) < len(slots) for x in shots):
        raise Failed(f"{where}: a timed call's output came back under an unknown slot")
    check_choice(
        where,
        shots,
        check_key,
        len(slots),
        int(sol.get("timed_calls", -1)),
        (samples, int(sol.get("cupti_calls", 0))),
    )
    # call i took input set i % sets: the judge's count, not the solution process's word
    for shot in sorted(shots, key=lambda x: int(x["call"]) % len(sets)):
        k, i = int(shot["slot"]), int(shot["call"])
        s = i % len(sets)
        if not shot.get("copied"):
            raise Failed(
                f"{where}: timed call {i} returned {shot.get('returned')}, not the checked outputs' shape"
            )
        if s not in precise:
            precise.clear()
            precise[s] = session.reference(sets[s], precise=True)
        copied = [v.clone() for v in slots[k]]
        ok, message, _ = judge_outputs(
            session, sets[s], Copied(copied, expected, session), expected, precise[s], False, ours=s == 0
        )
        del copied  # before the next shot's copy is made
        if not ok:
            under = " under the profiler (the CUPTI pass)" if i >= samples else ""
            raise Failed(
                f"{where}: timed call {i} (input set {s}) gave a wrong answer while timed{under}: {message}",
                {"case": case, "call": i, "set": s},
            )
    return len(shots)


def check_choice(
    where: str,
    shots: list[dict[str, Any]],
    key: bytes,
    slots: int,
    timed_calls: int,
    passes: tuple[int, int],
) -> None:
    """Failed where the timed calls whose outputs came back are not those the judge's key chose
    (`rung.common.checked_calls`), or their count is not the passes' calls (`passes`: the events
    pass's samples and the CUPTI pass's calls): the choice of checked calls was steered in the
    solution's process."""
    if timed_calls != sum(passes):
        raise Failed(
            f"{where}: the solution process counted {timed_calls} timed calls for its checked outputs "
            f"but reported {sum(passes)} timed calls: the choice of checked calls was tampered with"
        )
    held = drawn(key, slots, *passes)
    came = {int(x["slot"]): int(x["call"]) for x in shots}
    for slot, call in sorted(held.items()):
        if came.get(slot) != call:
            raise Failed(
                f"{where}: slot {slot} came back holding timed call {came.get(slot)}, where the judge's "
                f"draw put call {call}: the choice of checked calls was steered in the solution's process"
            )
    if len(came) != len(held):
        raise Failed(f"{where}: {len(came)} checked outputs came back where the judge drew {len(held)}")


def check_graph(
    session: Session,
    case: dict[str, Any],
    sets: list[Any],
    expected: Any,
    sol: dict[str, Any],
    drawn: tuple[Any, bytes],
) -> int:
    """Failed where the CUDA graph pass gave a figure but the captured call the judge's key drew
    (`checked_calls.graph_call`) did not come back right after the replays: a solution that does
    less work under stream capture. The number of outputs checked (0 or 1)."""
    graph = sol.get("graph") or {}
    if "median_ms" not in graph:
        return 0
    slot, key = drawn
    where = f"benchmark case {case}: the CUDA graph pass"
    shot = graph.get("checked") or {}
    calls = int(graph.get("calls_per_replay", 0))
    if not shot or calls < 1 or int(shot.get("call", -1)) != graph_call(key, calls):
        raise Failed(f"{where} gave a figure, but not the output of the captured call the judge drew")
    j = int(shot["call"])
    if not shot.get("copied"):
        raise Failed(
            f"{where}: captured call {j} returned {shot.get('returned')}, not the checked outputs' shape"
        )
    s = j % len(sets)
    precise = session.reference(sets[s], precise=True)
    copied = [v.clone() for v in slot]
    ok, message, _ = judge_outputs(
        session, sets[s], Copied(copied, expected, session), expected, precise, False, ours=s == 0
    )
    if not ok:
        raise Failed(
            f"{where}: captured call {j} (input set {s}) gave a wrong answer when replayed: {message} "
            "(a solution that does other work under stream capture)",
            {"case": case, "graph_call": j, "set": s},
        )
    return 1


def check_content_cache(session: Session, case: dict[str, Any], sets: list[Any], placed: list[Any]) -> None:
    """Failed where a timed input set, changed in one element of each floating input after its
    calls were timed (where it was placed), gives the answer it gave before: the solution keeps
    answers by what its inputs look like (a content cache: the timed sets repeat, so every timed
    call after the first of each set would be a hit, and every checked answer right)."""
    s = secrets.randbelow(len(sets))
    undo = change_one(sets[s])  # in place, undone after: a copy of a 6 GiB set may not fit
    if not undo:
        return
    try:
        session.at = f"benchmark case {case}, input set {s} changed in one element after it was timed"
        session.solution.refill(placed[s], sets[s])
        expected = session.reference(sets[s], precise=False)
        precise = session.reference(sets[s], precise=True)
        called = session.call(sets[s], expected, placed=placed[s])
        ok, message, _ = judge_outputs(session, sets[s], called, expected, precise, ours=True)
    finally:
        restore(undo)
    if not ok:
        raise Failed(
            f"benchmark case {case}: input set {s}, changed in one element of each floating input after "
            f"its calls were timed, gave a wrong answer ({message}): the solution answers from what it "
            "kept of inputs it saw before (a content cache), not from the inputs it is given",
            {"case": case, "set": s},
        )


def change_one(inputs: Any, tries: int = 16) -> list[tuple[torch.Tensor, int, torch.Tensor]]:
    """Change, in place, one element of each floating tensor of `inputs` (at a place the judge
    draws) to the value of another of its elements, so values stay in the inputs' own range; what
    `restore` needs to undo it (empty where no tensor showed two distinct values in `tries` draws)."""
    undo = []
    for t in leaves(inputs):
        if not t.is_floating_point() or t.numel() < 2 or not t.is_contiguous():
            continue
        flat, n = t.view(-1), t.numel()
        i = secrets.randbelow(n)
        j = next((j for j in (secrets.randbelow(n) for _ in range(tries)) if bool(flat[j] != flat[i])), None)
        if j is None:
            continue
        undo.append((flat, i, flat[i].clone()))
        flat[i] = flat[j]
    return undo


def restore(undo: list[tuple[torch.Tensor, int, torch.Tensor]]) -> None:
    for flat, i, old in undo:
        flat[i] = old


class TimedCallRaised(Exception):
    """The solution raised while being timed: the rung ends ERROR."""


class Copied:
    """A timed call's copied outputs in the form `judge_outputs` reads."""

    def __init__(self, outs: list[torch.Tensor], expected: Any, session: Session) -> None:
        from rung.common.messages import CallReport, OutputMeta

        self.warn = session.warn if session.lenient else None  # as the session's own calls

        metas = [
            OutputMeta(
                "Tensor", list(o.shape), str(o.dtype).removeprefix("torch."), str(o.device), True, True
            )
            for o in outs
        ]
        self.report = CallReport(
            "tensor" if isinstance(expected, torch.Tensor) else f"tuple of {len(outs)}", metas
        )
        self.outs = outs
