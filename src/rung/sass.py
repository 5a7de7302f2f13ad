"""Facts read off SASS text, and the dump rung that reports them (controller side, pure).

Per kernel: instruction count; tensor-core instructions (HGMMA/QGMMA/IGMMA are Hopper's wgmma,
HMMA/IMMA the older mma.sync path); global loads and stores by width (LDG.E.128 moves 16 bytes a
thread); the bulk tensor copy engine (UTMALDG, UBLKCP); local-memory traffic (LDL/STL: spills
or stack arrays). These answer most "why is it slow" questions without a GPU.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from rung.spec import Device, RungResult, Status

OPCODE = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)")
TENSOR = ("HGMMA", "QGMMA", "IGMMA", "HMMA", "IMMA", "DMMA")


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
    sass_files = [Path(a) for a in compiled.artifacts if a.endswith(".sass")]
    if not sass_files:
        return RungResult("dump", Status.SKIPPED, "the compile rung kept no SASS")
    per_kernel = {p.stem: facts(p.read_text()) for p in sass_files}
    out = sass_files[0].parent.parent / "dump" / "facts.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(per_kernel, indent=1))
    lines = []
    for name, f in per_kernel.items():
        tc = ", ".join(f"{k}x{v}" for k, v in f["tensor_core"].items()) or "no tensor-core instructions"
        access = " ".join(f"{k}:{v}" for k, v in f["global_access_bits"].items()) or "no global access"
        lines.append(
            f"  {name}: {f['instructions']} instructions; {tc}; {access}; "
            f"{'TMA; ' if f['tma'] else ''}{f['local_memory_ops']} local-memory ops"
        )
    metrics = {"kernels": per_kernel}
    return RungResult(
        "dump",
        Status.OK,
        f"SASS facts for {len(per_kernel)} kernel(s)\n" + "\n".join(lines),
        metrics,
        [str(out)],
    )
