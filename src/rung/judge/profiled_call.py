"""The call Nsight Compute profiled, checked by the judge against the reference.

The profile rung's target is a solution process: what it says is a claim, and a kernel that
recognises ncu's injection library (its environment, its loaded libraries) could do an eighth of
the work there and have ncu's figures (and its witness of bench's time) describe that. So the
target writes the bytes of every tensor the profiled call returned, in order, to a new file in
its scratch folder, and nothing else: no verdict, no description. The judge opens that file
without following a link (`safe_files`), takes exactly as many bytes as the reference's outputs
hold, lays them out in the shapes and dtypes it expects itself (`Session.expected`), and compares
them with the reference on the inputs it drew for the call, with correct's policy. A missing
file, a size other than the reference's, or a wrong value is a wrong answer in the profiled call.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from rung.common.safe_files import Refused, open_beneath
from rung.common.shm import TensorSpec
from rung.judge.rungs.bench_checks import Copied
from rung.judge.rungs.correct import judge_outputs
from rung.judge.rungs.outcome import Failed

if TYPE_CHECKING:
    from rung.judge.session import Session

OUTPUTS = "profile_outputs.bin"  # in the target's scratch folder


def read_outputs(scratch: Path, specs: list[TensorSpec], device: str) -> list[torch.Tensor]:
    """The profiled call's outputs from the target's file, laid out as `specs` on `device`;
    Failed, saying why, where the file is not there, not a plain file, or not of their size."""
    want = sum(s.nbytes for s in specs)
    try:
        fd = open_beneath(scratch, OUTPUTS)
    except Refused as e:
        raise Failed(f"its outputs did not come back ({OUTPUTS}: {e.reason})") from None
    with os.fdopen(fd, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size != want:
            raise Failed(f"{size} bytes of outputs came back where the reference's outputs hold {want}")
        data = bytearray(want)
        view, got = memoryview(data), 0
        while got < want:
            n = f.readinto(view[got:])
            if not n:
                raise Failed(f"{got} bytes of outputs came back where the reference's outputs hold {want}")
            got += n
    outs, at = [], 0
    for s in specs:
        raw = torch.frombuffer(data, dtype=torch.uint8, offset=at, count=s.nbytes) if s.nbytes else None
        flat = raw if raw is not None else torch.empty(0, dtype=torch.uint8)
        outs.append(flat.view(s.torch_dtype).reshape(s.shape).to(device))
        at += s.nbytes
    return outs


def wrong_answer(session: Session, inputs: tuple[Any, ...], scratch: Path) -> str:
    """Why the profiled call's outputs are wrong for `inputs` (the judge's own copy of what the
    target was given), or '' where they match the reference."""
    expected = session.reference(inputs, precise=False)
    try:
        outs = read_outputs(scratch, session.expected(expected), session.device)
        called = Copied(outs, expected, session)
        ok, message, _ = judge_outputs(
            session, inputs, called, expected, session.reference(inputs, precise=True), False, ours=True
        )
    except Failed as e:
        return e.message
    finally:
        (scratch / OUTPUTS).unlink(missing_ok=True)
    return "" if ok else message
