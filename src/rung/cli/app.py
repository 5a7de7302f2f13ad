"""The `rung` app: its consoles, the options commands share, and one flag per setting on the
root and after every command's name."""

from __future__ import annotations

import functools
import inspect
import sys
from importlib.metadata import version as package_version
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from rung import (
    knobs,
    settings,
)

app = typer.Typer(
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="rung: the verifiable loop for GPU kernels. Settings (below) come from these flags, then "
    "RUNG_* variables, then rung.toml or \\[tool.rung] in pyproject.toml; `rung config` shows each.",
)
# Piped output is read by scripts and agents: never wrap or truncate it. On a terminal, lines fit
# its width, wrapped at word boundaries (render.print_rung_line indents a rung's under its message).
_TERMINAL = sys.stdout.isatty()
out = Console(highlight=False, soft_wrap=not _TERMINAL, width=None if _TERMINAL else 240)
err = Console(stderr=True, highlight=False, soft_wrap=True)

JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object (for scripts and agents).")]
WorkspaceOpt = Annotated[
    Path | None,
    typer.Option("--workspace", "-w", help="Folder holding .rung/ (default: nearest upwards, else ./)."),
]
# Commands that only read: the workspace must exist, none is made in the current folder.
ReadWorkspaceOpt = Annotated[
    Path | None,
    typer.Option("--workspace", "-w", help="Folder holding .rung/ (default: the nearest upwards)."),
]


def _show_version(value: bool) -> None:
    if value:
        print(f"rung {package_version('rung')}")
        raise typer.Exit()


def _root(ctx: typer.Context, **flags: Any) -> None:
    """Resolve every setting (flags, environment, project file) once, before the command runs,
    and keep them in the environment until it ends (judges inherit them)."""
    given = {name: flags[settings.field(name)] for name in knobs.KNOBS}
    resolved = settings.resolve({n: v for n, v in given.items() if v is not None}, Path.cwd())
    ctx.obj = resolved
    ctx.with_resource(settings.exported(resolved))


def _setting_option(name: str) -> inspect.Parameter:
    knob = knobs.KNOBS[name]
    option = typer.Option(
        settings.flag(name),
        help=f"{knob.help} [{name}]",
        metavar=knob.type.__name__.upper(),
        rich_help_panel="Settings",
        show_default=False,
    )
    return inspect.Parameter(
        settings.field(name),
        inspect.Parameter.KEYWORD_ONLY,
        default=None,
        annotation=Annotated[str | None, option],
    )


# One flag per setting, generated from the knobs so that --help lists every one; text, so that
# a bad value is judged like one from any other source (settings.resolve names flag and setting).
_root.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
    [
        inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=typer.Context),
        inspect.Parameter(
            "version",
            inspect.Parameter.KEYWORD_ONLY,
            default=False,
            annotation=Annotated[
                bool,
                typer.Option(
                    "--version", callback=_show_version, is_eager=True, help="Print rung's version."
                ),
            ],
        ),
        *(_setting_option(name) for name in knobs.KNOBS),
    ]
)
_root.__annotations__ = {p.name: p.annotation for p in _root.__signature__.parameters.values()}  # type: ignore[attr-defined]
app.callback()(_root)


def _own_flags(signature: inspect.Signature) -> set[str]:
    """The flags and parameter names a command already has (a setting of the same flag, such as
    check's --strict or -w/--workspace, stays the command's own)."""
    flags = set(signature.parameters)
    for param in signature.parameters.values():
        for meta in getattr(param.annotation, "__metadata__", ()):
            flags.update(getattr(meta, "param_decls", ()) or ())
            if isinstance(meta.default, str) and meta.default.startswith("-"):
                flags.add(meta.default)  # Option("--flag") keeps its first name as `default`
        flags.add("--" + param.name.replace("_", "-"))
    return flags


_CTX = "settings_ctx"  # the command's context, handed to the wrapper by Typer


def with_settings(fn: Any) -> Any:
    """`fn` as a command that also takes every setting after its name (`rung check P --skip
    profile`), listed in its --help under Settings; one given there outranks the same before it."""
    signature = inspect.signature(fn, eval_str=True)
    own = _own_flags(signature)
    names = [n for n in knobs.KNOBS if settings.flag(n) not in own and settings.field(n) not in own]

    # Typer hands its context to one parameter: the command's own where it has one.
    has_ctx = next((p.name for p in signature.parameters.values() if p.annotation is typer.Context), None)

    @functools.wraps(fn)
    def command(*args: Any, **kwargs: Any) -> Any:
        ctx: typer.Context = kwargs[has_ctx] if has_ctx else kwargs.pop(_CTX)
        given = {n: kwargs.pop(settings.field(n)) for n in names}
        given = {n: v for n, v in given.items() if v is not None}
        if given:
            root = ctx.find_root()
            before = {n: root.params.get(settings.field(n)) for n in knobs.KNOBS}
            flags = {n: v for n, v in before.items() if v is not None} | given
            ctx.obj = settings.resolve(flags, Path.cwd())
            ctx.with_resource(settings.exported(ctx.obj))
        return fn(*args, **kwargs)

    context = inspect.Parameter(_CTX, inspect.Parameter.KEYWORD_ONLY, annotation=typer.Context)
    params = [*signature.parameters.values(), *(_setting_option(n) for n in names)]
    params += [] if has_ctx else [context]
    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in params}
    del command.__wrapped__  # typer reads __signature__, not the wrapped function's
    return command
