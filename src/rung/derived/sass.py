"""Facts read off SASS text, and the dump rung that reports them (controller side, pure).

Per kernel: instruction count; tensor-core instructions (HGMMA/QGMMA/IGMMA are Hopper's wgmma,
HMMA/IMMA the older mma.sync path); global loads and stores by width (LDG.E.128 moves 16 bytes a
thread); the bulk tensor copy engine (UTMALDG, UBLKCP); local-memory traffic (LDL/STL: spills
or stack arrays). These answer most "why is it slow" questions without a GPU.

Where the build kept line info, each kernel's SASS is also written interleaved with the
solution's source (`dump/<kernel>.sass_src.txt`, sass_source.py), and its facts name the source
lines that became the most instructions.

The SASS read is the judge's: disassembled from the CUBIN it copied out of the solution's scratch
folder when the compile request returned (`judge/build_copy.py`), read here only as such a copy
(`<run>/artifacts/compile/`, no link followed); what this rung writes goes to `<run>/dump/`, a
folder it makes, in files it creates new, named in the safe alphabet.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from rung.backends.cubin import LINED_SUFFIX
from rung.common.copies import read_copy, run_of
from rung.common.safe_files import Refused, own_folder, safe_name, write_new
from rung.derived.sass_source import Sources, parse, render, top_lines
from rung.spec import Device, RungResult, Status

OPCODE = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)")
TENSOR = ("HGMMA", "QGMMA", "IGMMA", "HMMA", "IMMA", "DMMA")
MAX_SASS_BYTES = 256 * 2**20


def facts(sass: str) -> dict[str, Any]:
    ops = OPCODE.findall(sass)
    base = Counter(op.split(".")[0] for op in ops)
    widths: Counter[str] = Counter()
    for op in ops:
        head = op.split(".")[0]
        if head in ("LDG", "STG"):
            bits = next((int(p) for p in op.split(".")[1:] if p in ("64", "128")), 32)
            widths[f"{head.lower()}_{bits}"] += 1
    return {
        "instructions": len(ops),
        "tensor_core": {k: base[k] for k in TENSOR if base[k]},
        "wgmma": bool(base["HGMMA"] or base["QGMMA"] or base["IGMMA"]),
        "global_access_bits": dict(sorted(widths.items())),
        "tma": bool(base["UTMALDG"] or base["UBLKCP"] or base["UTMASTG"]),
        "local_memory_ops": base["LDL"] + base["STL"],
        "barriers": base["BAR"],
    }


def dump(results: dict[str, RungResult], device: Device) -> RungResult:
    compiled = results["compile"]
    sass_files = [Path(a) for a in compiled.artifacts if a.endswith(".sass") and run_of(a) is not None]
    if not sass_files:
        return RungResult("dump", Status.SKIPPED, "the compile rung kept no SASS")
    per_kernel: dict[str, Any] = {}
    lines = []
    for path in sass_files:
        try:
            per_kernel[path.stem] = facts(read_copy(path, MAX_SASS_BYTES).decode(errors="replace"))
        except Refused as e:
            lines.append(f"  {path.name}: not read ({e.reason})")
    # <run>/dump/: made and written here in the controller, beside the judge's copies
    out = own_folder(sass_files[0].parents[2] / "dump")
    with_source = _with_source(sass_files, out, per_kernel)
    facts_file = write_new(out / "facts.json", json.dumps(per_kernel, indent=1))
    for name, f in per_kernel.items():
        tc = ", ".join(f"{k}x{v}" for k, v in f["tensor_core"].items()) or "no tensor-core instructions"
        access = " ".join(f"{k}:{v}" for k, v in f["global_access_bits"].items()) or "no global access"
        lines.append(
            f"  {name}: {f['instructions']} instructions; {tc}; {access}; "
            f"{'TMA; ' if f['tma'] else ''}{f['local_memory_ops']} local-memory ops"
        )
    metrics = {"kernels": per_kernel}
    if not with_source:
        lines.append("  no SASS with source: the build kept no line info")
    return RungResult(
        "dump",
        Status.OK,
        f"SASS facts for {len(per_kernel)} kernel(s)\n" + "\n".join(lines),
        metrics,
        [str(facts_file), *map(str, with_source)],
    )


def _with_source(sass_files: list[Path], out_dir: Path, per_kernel: dict[str, Any]) -> list[Path]:
    """`<build>.sass_src.txt` in `out_dir` for each build with line info (every kernel of its
    CUBIN); each build's facts get `source_lines` (how many lines of source its kernels came
    from) and `top_lines` (those that became the most instructions)."""
    written = []
    for sass in sass_files:
        if sass.stem not in per_kernel:
            continue
        try:
            lined = read_copy(sass.with_suffix(LINED_SUFFIX), MAX_SASS_BYTES).decode(errors="replace")
        except Refused:
            continue  # no line info kept
        kernels = parse(lined, Sources(sass.parents[2], sass.with_suffix(".cu")))
        if not kernels:
            continue
        path = write_new(
            out_dir / f"{safe_name(sass.stem)}.sass_src.txt", "\n".join(render(k) for k in kernels)
        )
        written.append(path)
        f = per_kernel[sass.stem]
        f["source_lines"] = len({w for k in kernels for _, _, w in k.instructions})
        f["top_lines"] = [
            {"line": w.label, "instructions": n, "text": w.text} for k in kernels for w, n in top_lines(k)
        ]
    return written
