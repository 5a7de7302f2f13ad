"""The judge's side of each rung that needs the solution called, by rung name (`rung_table`).

Each function takes the judge's `Session` and the request's params and returns a `RungResult`,
or raises `Failed` / `Skipped`; anything else the solution raises becomes ERROR in `main`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rung.rung_table import JUDGE, RUNGS
from rung.spec import RungResult

JUDGE_RUNGS: dict[str, Callable[[Any, dict[str, Any]], RungResult]] = {
    name: rung.load() for name, rung in RUNGS.items() if rung.where == JUDGE
}
