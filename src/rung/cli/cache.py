"""`rung cache`: rung's cache folder, shown and cleared."""

from __future__ import annotations

from typing import Any

import typer

from rung import (
    knobs,
)
from rung.cli.app import JsonOpt, app, out
from rung.spec import SCHEMA, dumps

cache_app = typer.Typer(
    no_args_is_help=True, help="rung's cache folder: device ceilings, kept timings, builds."
)
app.add_typer(cache_app, name="cache")


@cache_app.command("info")
def cache_info(json_out: JsonOpt = False) -> None:
    """Where the cache folder is and what rung keeps in it, with sizes."""
    from rung import cache

    folder, held = knobs.cache_dir(), cache.entries()
    if json_out:
        print(dumps({"schema": SCHEMA, "folder": str(folder), "entries": [_entry_json(e) for e in held]}))
        return
    out.print(f"cache folder: {folder}", markup=False)
    if not held:
        out.print("empty", style="dim")
    for e in held:
        out.print(f"  {e.path.name}: {e.files} files, {e.bytes / 2**20:.1f} MiB", markup=False)


@cache_app.command("clear")
def cache_clear(json_out: JsonOpt = False) -> None:
    """Remove what rung keeps in its cache folder (nothing else there is touched)."""
    from rung import cache

    removed = cache.clear()
    if json_out:
        print(
            dumps(
                {
                    "schema": SCHEMA,
                    "folder": str(knobs.cache_dir()),
                    "removed": [_entry_json(e) for e in removed],
                }
            )
        )
        return
    for e in removed:
        out.print(f"removed {e.path} ({e.files} files, {e.bytes / 2**20:.1f} MiB)", markup=False)
    if not removed:
        out.print(f"nothing to remove in {knobs.cache_dir()}", markup=False)


def _entry_json(entry: Any) -> dict[str, Any]:
    return {"path": str(entry.path), "files": entry.files, "bytes": entry.bytes}
