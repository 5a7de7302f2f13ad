"""The size gate (tinygrad's sz.py): src/rung may not grow past LINE_BUDGET lines in all, nor any
one module past FILE_LIMIT. `make check` runs it (`python tests/size_gate.py [SRC]`), and so does the
test suite (tests/test_size_gate.py). Raising the budget is a commit of its own that says why."""

from __future__ import annotations

import sys
from pathlib import Path

# 23,167 lines on 2026-12-07 (main and the restructure merged), plus about 5%: past this,
# growth is a decision, not a drift.
LINE_BUDGET = 24_300
FILE_LIMIT = 500  # a module past this is several concepts: split it

SRC = Path(__file__).resolve().parents[1] / "src" / "rung"


def over(src: Path = SRC, budget: int = LINE_BUDGET, limit: int = FILE_LIMIT) -> list[str]:
    """What breaks the gate under `src`, one line each; empty where nothing does."""
    sizes = {path: len(path.read_text().splitlines()) for path in sorted(src.rglob("*.py"))}
    found = [
        f"{path.relative_to(src.parent)}: {n} lines, over {limit}" for path, n in sizes.items() if n > limit
    ]
    total = sum(sizes.values())
    if total > budget:
        found.append(
            f"{src.name}: {total} lines in all, over the budget of {budget} (tests/size_gate.py's LINE_BUDGET)"
        )
    return found


if __name__ == "__main__":
    broken = over(Path(sys.argv[1]) if len(sys.argv) > 1 else SRC)
    for line in broken:
        print(f"size gate: {line}", file=sys.stderr)
    sys.exit(1 if broken else 0)
