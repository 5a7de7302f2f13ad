"""Where each RUNG_* setting's value comes from, resolved once by the CLI before anything runs.

Sources, the first that gives a setting wins: a flag (`rung --trials 1 check ...`), the
environment (`RUNG_TRIALS=1`), the project file (the nearest `rung.toml`, or `pyproject.toml`
with a `[tool.rung]` table, from the current folder upwards), then the knob's default. The
environment outranks the file as it does for ruff and pydantic-settings: a one-off
`RUNG_SKIP=profile rung check ...` needs no edit of the project's file.

Every source's values are validated by one typed model (pydantic-settings), so a bad value is a
`UsageError` naming the setting and its source, before a judge starts, never blamed on a kernel.
`exported` puts the resolved values into the environment as RUNG_*, where `knobs.get` reads them
in this process and in every judge it starts (a judge's environment keeps RUNG_*).
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError, create_model
from pydantic_settings import BaseSettings, EnvSettingsSource, PydanticBaseSettingsSource, SettingsConfigDict

from rung import knobs
from rung.errors import UsageError
from rung.ladder import NAMES

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

PATHS = {"RUNG_WORKSPACE", "RUNG_CACHE_DIR"}  # relative values in a file are relative to that file


def field(knob_name: str) -> str:
    """The setting's name in a project file: RUNG_BENCH_MAX_S -> bench_max_s."""
    return knob_name.removeprefix("RUNG_").lower()


def flag(knob_name: str) -> str:
    """The setting's command-line flag: RUNG_BENCH_MAX_S -> --bench-max-s."""
    return "--" + field(knob_name).replace("_", "-")


class _Typed(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="RUNG_", env_ignore_empty=True, extra="forbid")

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Built from values already resolved here, source by source, so each is blamed on its own.
        return (init_settings,)


Settings: type[_Typed] = create_model(
    "Settings",
    __base__=_Typed,
    **{
        field(k.name): (
            k.type,
            Field(
                k.default,
                description=k.help,
                pattern=k.pattern or None,
                ge=k.at_least if k.type in (int, float) else None,
            ),
        )
        for k in knobs.KNOBS.values()
    },  # type: ignore[call-overload]
)


@dataclass(frozen=True)
class Resolved:
    """One setting: its value and where it came from ('flag --trials', 'environment RUNG_TRIALS',
    the project file's path, or 'default')."""

    name: str
    value: Any
    source: str


def find_project_file(start: Path) -> Path | None:
    """The nearest rung.toml, or pyproject.toml with [tool.rung], in `start` or a folder above."""
    here = start.resolve()
    for folder in (here, *here.parents):
        if (folder / "rung.toml").is_file():
            return folder / "rung.toml"
        pyproject = folder / "pyproject.toml"
        if pyproject.is_file() and "rung" in _read_toml(pyproject).get("tool", {}):
            return pyproject
    return None


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise UsageError(f"{path}: not readable as TOML: {e}") from None


def _file_values(path: Path) -> dict[str, Any]:
    table = _read_toml(path)
    if path.name == "pyproject.toml":
        table = table.get("tool", {}).get("rung", {})
    known = {field(n) for n in knobs.KNOBS}
    for key in table:
        if key not in known:
            close = difflib.get_close_matches(str(key), known, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise UsageError(f"{_file_source(path)}: unknown setting {key!r} ({hint}rung config lists them)")
    values = {}
    for name in knobs.KNOBS:
        if field(name) in table:
            value = table[field(name)]
            if name in PATHS and isinstance(value, str) and value:
                value = str((path.parent / value).resolve())
            values[name] = value
    return values


def _file_source(path: Path) -> str:
    return f"{path} [tool.rung]" if path.name == "pyproject.toml" else str(path)


def _checked(name: str, raw: Any, source: str) -> Any:
    """`raw` as the setting's type, or a UsageError naming the setting, the value and the source."""
    try:
        return getattr(Settings(**{field(name): raw}), field(name))
    except ValidationError as e:
        error = e.errors()[0]
        # A pattern is no help to a person: the knob's help says what the value may be.
        mismatch = error["type"] == "string_pattern_mismatch"
        reason = f"not valid here: {knobs.KNOBS[name].help}" if mismatch else error["msg"]
        if mismatch and name == "RUNG_SKIP":
            reason += f" (the rungs: {', '.join(NAMES)})"
        raise UsageError(f"{source}: {field(name)} = {raw!r}: {reason}") from None


def resolve(flags: dict[str, str], start: Path) -> dict[str, Resolved]:
    """Every setting, from `flags` (knob name -> the text given), the environment, the project
    file found from `start`, else its default. Every value of every source is validated, the
    outranked ones too: a bad value would bite as soon as the one above it goes."""
    environment = EnvSettingsSource(Settings)()
    project = find_project_file(start)
    ranked = [
        {n: (raw, f"flag {flag(n)}") for n, raw in flags.items()},
        {n: (environment[field(n)], f"environment {n}") for n in knobs.KNOBS if field(n) in environment},
        {n: (raw, _file_source(project)) for n, raw in _file_values(project).items()} if project else {},
    ]
    checked = [{n: Resolved(n, _checked(n, raw, src), src) for n, (raw, src) in s.items()} for s in ranked]
    return {
        name: next((s[name] for s in checked if name in s), Resolved(name, knob.default, "default"))
        for name, knob in knobs.KNOBS.items()
    }


@contextmanager
def exported(resolved: dict[str, Resolved]) -> Iterator[None]:
    """Put every value that is not its default into the environment as RUNG_*, for `knobs.get`
    and the judges started meanwhile; restores what was there."""
    with knobs.scoped(**{n: r.value for n, r in resolved.items() if r.source != "default"}):
        yield
