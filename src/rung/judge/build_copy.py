"""The compile rung's build products, out of the scratch folder: copied right after the compile
request returns, each checked against the SHA-256 the build reported as it wrote it (a file that
changed since is refused), and the SASS the dump rung reads its facts from disassembled here,
by the judge, from the copied CUBIN, never taken from a `.sass` text the solution process wrote
and could rewrite (nvdisasm, Triton's or the toolkit's: 0.35 s of CPU for vector_add's Triton
kernel on this 2-core machine, builds disassembled side by side). Where no disassembler is here,
the build's `.sass` is copied, checked against its hash like any file.
"""

from __future__ import annotations

import hashlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rung.backends import cubin
from rung.backends.cubin import LINED_SUFFIX
from rung.common.safe_files import safe_name, write_new
from rung.judge.artifacts import Copied, copy_out

DERIVED = (".sass", LINED_SUFFIX)  # made here from a CUBIN where it can be


@dataclass
class Kept:
    copied: Copied
    paths: list[str] = field(default_factory=list)  # the copies, in the build's order
    notes: list[str] = field(default_factory=list)  # what the rung's message should add


def keep_build(run_dir: Path, answer: dict[str, Any]) -> Kept:
    """Copy the build's artifacts to `<run>/artifacts/compile/` and disassemble each CUBIN there."""
    paths = [str(a) for a in answer.get("artifacts") or []]
    reported = answer.get("artifact_sha256")
    built = {str(k): str(v) for k, v in reported.items()} if isinstance(reported, dict) else {}
    derive = cubin.can_disassemble()
    # SASS the solution process wrote is never read where the judge can make its own
    made_here = [p for p in paths if derive and Path(p).suffix in DERIVED]
    kept = Kept(copy_out(run_dir, "compile", [p for p in paths if p not in made_here], built))
    copied = [(given, kept.copied.copies[given]) for given in paths if given in kept.copied.copies]
    to_read = [copy for _, copy in copied if derive and copy.suffix == ".cubin"]
    with ThreadPoolExecutor(max(1, min(8, len(to_read)))) as pool:  # nvdisasm: ~0.3 s of CPU a build
        texts = dict(zip(to_read, pool.map(cubin.sass_texts, to_read), strict=True))
    for given, copy in copied:
        kept.paths.append(str(copy))
        if copy in texts:
            claimed = built.get(str(Path(given).with_suffix(".sass")))
            kept.paths += _disassembled(kept, copy, texts[copy], claimed)
    return kept


def _disassembled(kept: Kept, copy: Path, texts: tuple[str, str], claimed: str | None) -> list[str]:
    """`<stem>.sass` (and `.sass_lineinfo` where the build kept line info) of the copied CUBIN."""
    sass, lined = texts
    if not sass.strip():
        kept.notes.append(f"compile: {copy.name} could not be disassembled here: no SASS facts for it")
        return []
    written = [_write(kept.copied, copy.with_suffix(".sass"), sass)]
    if lined != sass:
        written.append(_write(kept.copied, copy.with_suffix(LINED_SUFFIX), lined))
    if claimed and claimed != kept.copied.sha256[written[0].name]:
        kept.notes.append(
            f"compile: {safe_name(copy.stem)}.sass as the build wrote it is not the SASS of its CUBIN; "
            "the judge's own disassembly is kept"
        )
    return [str(p) for p in written]


def _write(copied: Copied, path: Path, text: str) -> Path:
    data = text.encode()
    copied.taken.add(path.name)
    copied.sha256[path.name] = hashlib.sha256(data).hexdigest()
    return write_new(path, data)
