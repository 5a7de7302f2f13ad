"""The `rung` command: a thin layer over the library that maps errors to exit codes and words.

Exit codes: 0 no solution failed (each verified, or not verifiable on this machine: a skip, as
pytest counts one; `--json`'s `ok` is true only for a verified one); 1 a solution failed; 2 bad
usage or a bad problem (one line on stderr, no traceback); 130 interrupted.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import shlex
import signal
import sys
import time
from importlib.metadata import version as package_version
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.text import Text

from rung import (
    api,
    confine,
    expectations,
    knobs,
    precheck,
    progress,
    render,
    runner,
    scaffold,
    settings,
    views,
)
from rung.errors import RungError
from rung.spec import SCHEMA, Outcome, Run, RungResult, Status, dumps
from rung.store import existing_workspace, find_workspace

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


@app.command()
def check(
    problem: Annotated[
        Path,
        typer.Argument(
            help="Problem: a folder with problem.py (rung's), a GPU MODE folder (reference.py, task.yml), "
            "or a KernelBench .py file (Model, get_inputs, get_init_inputs)."
        ),
    ],
    solutions: Annotated[
        list[Path] | None,
        typer.Argument(
            help="Solution files defining custom_kernel (KernelBench: class ModelNew); none: every "
            ".py file under the problem's solutions/ folder (correct/, wrong/, ...)."
        ),
    ] = None,
    json_out: JsonOpt = False,
    workspace: WorkspaceOpt = None,
    strict: Annotated[
        bool,
        typer.Option(
            "--strict",
            help="GPU MODE and KernelBench: fail on rung's own dtype, shape and tolerance rules too "
            "(by default the problem's own check decides and those rules warn; RUNG_STRICT=1).",
        ),
    ] = False,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="Leave SKIPPED rungs out of the rung lines.")
    ] = False,
    exitfirst: Annotated[
        bool,
        typer.Option(
            "--exitfirst",
            "-x",
            help="Stop at the first version that fails, unless expected.yml says it must (one by one).",
        ),
    ] = False,
) -> None:
    """Climb the ladder for each solution: load, compile, run, correct, scale, guard, and the GPU rungs;
    one summary line at the end. `rung problem PATH` shows what a problem holds (cases, input
    shapes, tolerance, cost model)."""
    paths = solutions or scaffold.solutions_of(problem)
    at_once = not exitfirst and (knobs.get("RUNG_EXECUTOR") != "local" or knobs.get("RUNG_WORKERS") > 0)
    expected = expectations.read(problem) if problem.is_dir() else {}
    shown = Shown(json_out, quiet, exitfirst, expected)
    began = time.time()
    if not json_out:
        _first_look(paths, exitfirst, began)
    said = signal.signal(signal.SIGINT, functools.partial(_on_ctrl_c, shown))
    try:
        with knobs.scoped(RUNG_STRICT=1) if strict else contextlib.nullcontext():
            climb = _check_at_once if at_once else _check_one_by_one
            runs, wall_s = climb(problem, paths, workspace, shown)
    except KeyboardInterrupt:  # Ctrl-C, or SIGTERM (runner.on_sigterm): the runs are stored INTERRUPTED
        _say_interrupted(workspace, began)
        raise typer.Exit(130) from None
    finally:
        signal.signal(signal.SIGINT, said)
    seen = _seen(runs, expected)
    if json_out:
        doc = views.check_doc(runs)
        for solution, run in zip(doc["solutions"], runs, strict=True):
            if (want := expected.get(Path(run.solution.path).resolve())) is not None:
                solution["expected"] = {
                    **dataclasses.asdict(want),
                    "met": None if run.outcome == Outcome.UNVERIFIED else run.id not in seen.missed,
                }
        print(dumps({**doc, "summary": progress.summary(runs, wall_s, seen)}))
        raise typer.Exit(1 if seen.failing(runs) else 0)
    recap = progress.recap(runs, seen)
    if recap:
        out.print(Text("== not verified ==", style="bold"))
        for line in recap:
            out.print(line)
    if len(runs) < len(paths):
        out.print(
            f"stopped at the first failed version (-x): {len(paths) - len(runs)} not checked", markup=False
        )
    out.print(progress.summary_line(runs, wall_s, seen))
    raise typer.Exit(1 if seen.failing(runs) else 0)


def _seen(runs: list[Run], expected: dict[Path, expectations.Expected]) -> progress.Expectations:
    """Which wrong versions failed as their problem's expected.yml says, and how the others did not."""
    xfailed, missed = set(), {}
    for run in runs:
        want = expected.get(Path(run.solution.path).resolve())
        if want is None:
            continue
        how = expectations.missed(run, want)
        if how:
            missed[run.id] = how
        elif run.outcome == Outcome.FAILED:
            xfailed.add(run.id)
    return progress.Expectations(frozenset(xfailed), missed)


def _first_look(paths: list[Path], exitfirst: bool, began: float) -> None:
    """What the sources alone say, before any judge starts (precheck: a syntax error, a missing
    extra), printed at once; the ladder says it again in its place. With -x a version that fails
    here stops the check before anything climbs, as pytest's collection errors do."""
    failed = 0
    for path in paths:
        if not path.is_file():
            continue  # api.check names it
        found = precheck.load_verdict(path.name, path.read_bytes().decode(errors="replace"))
        if found is not None:
            failed += found.status == Status.FAILED
            word = "FAIL at load" if found.status == Status.FAILED else "SKIPPED at load"
            out.print(f"{word}  {path}: {found.message}", markup=False)
    if exitfirst and failed:
        out.print(
            f"== stopped before any judge started (-x): {failed} failed, {len(paths)} not climbed"
            f" in {time.time() - began:.1f}s ==",
            markup=False,
        )
        raise typer.Exit(1)


def _on_ctrl_c(shown: Shown, signum: int, frame: Any) -> None:
    """Say at once what Ctrl-C stops; the line saying where its record is follows once the run
    is stored INTERRUPTED and its judge killed."""
    now = f" {shown.climbing[0].solution.path} (run {shown.climbing[0].id})" if shown.climbing else ""
    err.print(f"interrupted: stopping{now}", markup=False)
    raise KeyboardInterrupt


def _say_interrupted(workspace: Path | None, began: float) -> None:
    """What the interrupt stopped and where its record is: each run of this check the store holds
    as INTERRUPTED."""
    try:
        with api.open_store(workspace) as store:
            stopped = [r for r in store.runs() if r.started >= began and r.outcome != Outcome.VERIFIED]
    except RungError:  # interrupted before the workspace was made
        stopped = []
    stopped = [r for r in stopped if r.verdict.startswith("INTERRUPTED")]
    for run in stopped:
        where = next(r.name for r in run.rungs if r.status == Status.INTERRUPTED)
        err.print(
            f"interrupted: {run.solution.path} at {where}; stored as run {run.id} INTERRUPTED (rung show {run.id})",
            markup=False,
        )
    if not stopped:
        err.print("interrupted before any version was stored", markup=False)


@dataclasses.dataclass(frozen=True)
class Shown:
    """What a check prints while it climbs: nothing (--json), every rung or all but the SKIPPED
    ones (-q); and whether it stops at the first failed version (-x)."""

    json_out: bool
    quiet: bool
    exitfirst: bool
    expected: dict[Path, expectations.Expected] = dataclasses.field(default_factory=dict)
    climbing: list[Run] = dataclasses.field(default_factory=list)  # the run climbing now, once known

    def stops(self, run: Run) -> bool:
        """-x: whether the check stops after `run`: it failed, and not as expected.yml says."""
        want = self.expected.get(Path(run.solution.path).resolve())
        failed = run.outcome == Outcome.FAILED
        return self.exitfirst and failed and (want is None or bool(expectations.missed(run, want)))


def _check_one_by_one(
    problem: Path, paths: list[Path], workspace: Path | None, shown: Shown
) -> tuple[list[Run], float]:
    """Each solution in turn, its rung lines printed as each rung ends."""
    runs_dir = (workspace.resolve() if workspace else find_workspace()) / ".rung" / "runs"
    climbing = progress.Climbing(out, paths, runs_dir)

    def rung_done(run: Run, result: RungResult) -> None:
        shown.climbing[:] = [run]
        if len(run.rungs) == 1:
            out.print(render.header(run))
        if not (shown.quiet and result.status == Status.SKIPPED):
            render.print_rung_line(out, result)
        climbing.rung_done(run.id, result.name)

    def run_done(run: Run) -> None:
        out.print(render.verdict(run))
        climbing.run_done()

    if shown.json_out:
        return api.check(problem, paths, workspace, stop_after=shown.stops), climbing.wall_s
    with climbing:
        runs = api.check(
            problem, paths, workspace, on_rung=rung_done, on_run=run_done, stop_after=shown.stops
        )
        return runs, climbing.wall_s


def _check_at_once(
    problem: Path, paths: list[Path], workspace: Path | None, shown: Shown
) -> tuple[list[Run], float]:
    """The solutions climbing at once on RUNG_EXECUTOR's workers; a run printed whole as it ends
    (in the order given), for rung lines of several runs would interleave."""
    climbing = progress.ClimbingAtOnce(out, paths)

    def run_done(run: Run) -> None:
        render.print_run(out, run, hide_skipped=shown.quiet)
        climbing.run_done(run)

    executor, workers = str(knobs.get("RUNG_EXECUTOR")), int(knobs.get("RUNG_WORKERS")) or None
    if shown.json_out:
        return api.check_many(problem, paths, executor, workers, workspace), climbing.wall_s
    with climbing:
        runs = api.check_many(
            problem,
            paths,
            executor,
            workers,
            workspace,
            on_rung=lambda run, result: climbing.rung_done(run, result.name),
            on_run=run_done,
        )
    return runs, climbing.wall_s


@app.command()
def optimize(
    problem: Annotated[Path, typer.Argument(help="Problem folder or KernelBench file.")],
    agent: Annotated[
        str,
        typer.Option(
            "--agent", help="llm (a language model), tune (vary TUNE values) or replay (recorded versions)."
        ),
    ],
    start: Annotated[
        str | None,
        typer.Option(
            "--from",
            help="Version to start from: a solution file or a stored run number; a failing one is "
            "repaired first (RUNG_REPAIR_TURNS rounds). Default: the best stored.",
        ),
    ] = None,
    replay: Annotated[
        list[Path] | None,
        typer.Option("--replay", help="For --agent replay: a version to play back (repeat)."),
    ] = None,
    provider: Annotated[
        str | None,
        typer.Option(help="For --agent llm: anthropic, or openai (any OpenAI-compatible endpoint)."),
    ] = None,
    model: Annotated[str | None, typer.Option(help="For --agent llm: the model name.")] = None,
    base_url: Annotated[
        str | None, typer.Option(help="For --agent llm: the endpoint (vLLM, SGLang, Ollama, llama.cpp, ...).")
    ] = None,
    llm_config: Annotated[
        Path | None,
        typer.Option(help="For --agent llm: a YAML file of settings (default: .rung/llm.yml if present)."),
    ] = None,
    backend: Annotated[
        str | None,
        typer.Option(help="Pin the kernel language the agent writes: triton, cute, tilelang, cuda, torch."),
    ] = None,
    hint: Annotated[
        list[str] | None, typer.Option("--hint", help="Guidance passed to the agent (repeat).")
    ] = None,
    interactive: Annotated[
        bool,
        typer.Option(
            "--interactive", "-i", help="After each round: see the best, add a hint, accept or stop."
        ),
    ] = False,
    rounds: Annotated[int, typer.Option(min=1, help="Round budget.")] = 10,
    max_minutes: Annotated[float | None, typer.Option(help="Wall-time budget in minutes.")] = None,
    max_tokens: Annotated[int | None, typer.Option(help="Token budget (prompt + reply, all calls).")] = None,
    max_usd: Annotated[
        float | None, typer.Option(help="Money budget in US dollars (needs the model's prices).")
    ] = None,
    parallel: Annotated[
        int,
        typer.Option(
            "--parallel",
            "--width",
            min=1,
            help="Candidates per round; several climb at once on RUNG_EXECUTOR's workers.",
        ),
    ] = 1,
    target: Annotated[float, typer.Option(help="Stop at this fraction of the roofline.")] = 0.9,
    plateau: Annotated[
        int, typer.Option(help="Stop after this many rounds without a gain above the noise.")
    ] = 3,
    json_out: JsonOpt = False,
    jsonl: Annotated[
        bool, typer.Option("--jsonl", help="Print every event as one JSON line, the summary last.")
    ] = False,
    workspace: WorkspaceOpt = None,
) -> None:
    """Rounds of propose, climb the ladder, keep the best, until the roofline, a plateau or a budget.
    `rung hint PROBLEM TEXT` steers a loop while it runs; `rung hint PROBLEM --pause` holds it."""
    from rung import optimize as loop
    from rung.agents import idioms
    from rung.agents.pick import AgentOptions, make_agent

    if interactive and (json_out or jsonl):
        raise RungError("--interactive talks to a person: leave out --json and --jsonl")
    pinned = idioms.check_pin(backend or "")
    store = api.open_store(workspace)
    start_at = _starting_point(store, problem, start)
    options = AgentOptions(
        start_at if isinstance(start_at, Path) else _source_file(store, start_at),
        replay or [],
        llm_config,
        {"provider": provider, "model": model, "base_url": base_url},
        store.root.parent,
        needs_prices=max_usd is not None,
        candidates=rounds * parallel,
    )
    rules = loop.Rules(parallel, target, plateau, int(knobs.get("RUNG_REPAIR_TURNS")), pinned)
    budget = loop.Budget(rounds, max_minutes * 60 if max_minutes is not None else None, max_tokens, max_usd)
    outcome = loop.optimize(
        store,
        problem,
        make_agent(agent, options),
        start_at,
        budget,
        hints=hint or [],
        on_event=_optimize_events(json_out, jsonl, rounds),
        ask=_ask_person if interactive else None,
        rules=rules,
    )
    _optimize_summary(outcome, json_out, jsonl)
    raise typer.Exit(0 if outcome.best.ok else 1)


def _starting_point(store: Any, problem: Path, start: str | None) -> Path | Run | None:
    """--from: a solution file, else a stored run of this problem by number; None for the best stored."""
    if start is None:
        return None
    if Path(start).is_file():
        return Path(start)
    if not start.isdigit():
        raise RungError(f"{start}: no such solution file (nor a run number)")
    run = store.run(int(start))
    name = problem.stem if problem.is_file() else problem.resolve().name
    if run.problem != name:
        raise RungError(f"run {run.id} is a run of {run.problem}, not of {name}")
    return run


def _source_file(store: Any, run: Run | None) -> Path | None:
    """A stored run's source as a file under .rung/versions/ (an agent reads files), the bytes that ran."""
    if run is None:
        return None
    path = store.root / "versions" / run.problem / f"{run.solution.sha256[:12]}.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(store.source(run.solution.sha256))
    return path


def _optimize_events(json_out: bool, jsonl: bool, rounds: int) -> Any:
    def show(event: dict[str, Any]) -> None:
        if jsonl:
            print(dumps(event), flush=True)
        elif not json_out:
            out.print(render.event(event, rounds), markup=False)

    return show


def _ask_person(best: Run, top: list[Run]) -> Any:
    """Interactive mode: the best version's ladder, then the person's word."""
    from rung.optimize import Guidance

    out.print("best so far:", style="bold")
    render.print_run(out, best)
    for r in top:
        if r.id != best.id:
            out.print(f"  also: run {r.id} {r.solution.path} ({r.verdict})", style="dim", markup=False)
    said = typer.prompt(
        "[Enter] go on · h <text> add a hint · a accept · s stop", default="", show_default=False
    )
    word, _, rest = said.strip().partition(" ")
    if word in ("a", "accept"):
        return Guidance("accept")
    if word in ("s", "stop", "q"):
        return Guidance("stop")
    return Guidance("continue", rest.strip() if word in ("h", "hint") else said.strip())


def _optimize_summary(outcome: Any, json_out: bool, jsonl: bool) -> None:
    summary = {
        "schema": SCHEMA,
        "reason": outcome.reason,
        "rounds": outcome.rounds,
        "best": views.solution_json(outcome.best, outcome.witnesses),
        "candidates": [views.solution_json(r, outcome.witnesses) for r in outcome.candidates],
        "no_version": outcome.failures,
        "spent": outcome.spent,
    }
    if jsonl:
        print(dumps({"event": "done", **summary}))
        return
    if json_out:
        print(dumps(summary))
        return
    out.print(
        f"best: run {outcome.best.id} {outcome.best.solution.path} ({outcome.best.verdict}) "
        f"{render.witnessed(outcome.best, outcome.witnesses)}".rstrip(),
        markup=False,
    )
    s = outcome.spent
    out.print(
        f"spent: {s.rounds} rounds, {s.wall_s:.0f} s, {s.tokens} tokens, ${s.usd:.2f}; "
        f"loop overhead {s.overhead_s:.2f} s",
        style="dim",
    )
    out.print(f"stopped: {outcome.reason}", markup=False)


@app.command()
def hint(
    problem: Annotated[Path, typer.Argument(help="Problem folder (or its name) of a running or later loop.")],
    text: Annotated[str | None, typer.Argument(help="Guidance for the agent's next round.")] = None,
    pause: Annotated[bool, typer.Option("--pause", help="Hold the loop after its current round.")] = False,
    resume: Annotated[bool, typer.Option("--resume", help="Let a paused loop go on.")] = False,
    clear: Annotated[bool, typer.Option("--clear", help="Forget the problem's hints.")] = False,
    workspace: ReadWorkspaceOpt = None,
) -> None:
    """Steer `rung optimize`: a hint reaches the agent at the loop's next round (and every later
    loop on the problem) and is recorded with the versions written under it; --pause and
    --resume hold and release the loop between rounds. With nothing given: the hints so far."""
    from rung.steer import Steering

    name = problem.stem if problem.is_file() else problem.resolve().name if problem.exists() else problem.name
    steering = Steering(existing_workspace(workspace), name)
    if clear:
        steering.clear_hints()
    if text is not None:
        steering.add_hint(text)
        out.print(f"hint for {name}: {text.strip()} (the agent reads it at the next round)", markup=False)
    if pause:
        steering.pause()
        out.print(
            f"{name}: the loop pauses after its current round (rung hint {problem} --resume)", markup=False
        )
    if resume:
        steering.resume()
        out.print(f"{name}: resumed", markup=False)
    if text is None and not (pause or resume or clear):
        for h in steering.hints():
            out.print(f"- {h}", markup=False)
        out.print(f"{name}: {'paused' if steering.paused else 'not paused'}", style="dim", markup=False)


@app.command()
def device(
    json_out: JsonOpt = False,
    workspace: ReadWorkspaceOpt = None,
    remeasure: Annotated[
        bool, typer.Option("--remeasure", help="Measure again, ignoring the cache.")
    ] = False,
) -> None:
    """This machine's GPU and its measured ceilings beside the datasheet (measured once, then
    cached), and what this kernel offers to confine solution processes."""
    asking = "asking a judge process about this machine (a GPU's ceilings are measured once: about a minute)"
    with contextlib.nullcontext() if json_out else progress.waiting(err, asking):
        dev = api.device(workspace, remeasure)
    confinement = confine.probe()
    if json_out:
        print(dumps({"schema": SCHEMA, "device": dev, "confinement": confinement}))
        return
    out.print(render.device(dev))
    out.print(render.confinement(confinement))


@app.command()
def init(
    folder: Annotated[Path, typer.Argument(help="Workspace folder (created if missing).")] = Path("."),
) -> None:
    """A workspace for a coding agent: .rung/, problems/, context/, AGENTS.md (the loop), CLAUDE.md, .mcp.json."""
    for path in scaffold.init_workspace(folder):
        out.print(f"created {path}", markup=False)
    steps = [] if folder.resolve() == Path.cwd().resolve() else [f"cd {shlex.quote(str(folder))}"]
    steps += ["rung new my_op", "rung check problems/my_op"]
    out.print("next (problems/my_op: a problem that already climbs, to edit; then its solutions checked):")
    for step in steps:
        out.print(f"  {step}", markup=False)


@app.command()
def new(
    name: Annotated[str, typer.Argument(help="Problem name: lower case, digits, underscores.")],
    problems: Annotated[
        Path | None,
        typer.Option(
            "--problems",
            help="Folder of problems (default: the workspace's problems/, as rung init made it).",
        ),
    ] = None,
    backend: Annotated[
        str,
        typer.Option(
            "--backend", help="Language of the first solution: torch, triton, cuda, cute, tilelang."
        ),
    ] = "torch",
) -> None:
    """A problem folder that already climbs the ladder (reference, shapes, cost model, a first solution)."""
    folder, _ = scaffold.new_problem(problems or find_workspace() / "problems", name, backend)
    here = Path.cwd().resolve()
    shown = folder.relative_to(here) if folder.is_relative_to(here) else folder
    out.print(f"created {shown}: edit problem.py, then rung check {shown}", markup=False)


@app.command()
def history(
    problem: Annotated[Path, typer.Argument(help="Problem folder, or its name.")],
    json_out: JsonOpt = False,
    workspace: ReadWorkspaceOpt = None,
) -> None:
    """List every version checked for a problem, with its verdict and key figures."""
    runs = api.history(problem, existing_workspace(workspace))
    if json_out:
        print(dumps(views.history_doc(problem.name, runs)))
        return
    if not runs:
        out.print(f"no runs for {problem.name} in this workspace")
        return
    out.print(render.history(runs))


@app.command()
def report(
    problem: Annotated[
        Path | None,
        typer.Argument(help="Problem folder, or its name (default: the problem of the latest run)."),
    ] = None,
    out_path: Annotated[
        Path | None,
        typer.Option("--out", help="Where to write the page (default: .rung/report/<problem>.html)."),
    ] = None,
    json_out: JsonOpt = False,
    workspace: ReadWorkspaceOpt = None,
) -> None:
    """Write a static HTML page of a problem's versions (works offline): times and % of roofline
    over the versions, a roofline chart, the best version's cases, every run's rungs and artifacts."""
    from rung import report as html_report  # matplotlib: imported by this command only

    doc = html_report.write(existing_workspace(workspace), problem, out_path)
    if json_out:
        print(dumps(doc))
        return
    counts = {word: sum(r["outcome"] == word for r in doc["runs"]) for word in ("verified", "failed")}
    out.print(
        f"wrote {doc['out']}: {len(doc['runs'])} versions of {doc['problem']}, {counts['verified']} verified, "
        f"{counts['failed']} failed, {len(doc['runs']) - sum(counts.values())} not verified here",
        markup=False,
    )


@app.command()
def show(
    run_id: Annotated[int, typer.Argument(help="Run number, as printed by check and history.")],
    rung_name: Annotated[
        str | None, typer.Option("--rung", help="Only this rung, with every figure (bench, dump, ...).")
    ] = None,
    json_out: JsonOpt = False,
    workspace: ReadWorkspaceOpt = None,
) -> None:
    """Show one stored run: every rung, its figures, its artifacts and its lineage (its parents' runs)."""
    found = existing_workspace(workspace)
    run = api.show(run_id, found)
    if rung_name is not None:
        doc = views.rung_doc(run, rung_name)
        if json_out:
            print(dumps(doc))
        else:
            render.print_rung(out, run, next(r for r in run.rungs if r.name == rung_name))
        return
    doc = views.show_doc(run, api.lineage(run_id, found))
    if json_out:
        print(dumps(doc))
        return
    render.print_run(out, run)
    for r in run.rungs:
        for a in r.artifacts:
            out.print(f"    {r.name}: {a}", style="dim")
    render.print_lineage(out, doc["lineage"])


@app.command()
def diff(
    run_a: Annotated[int, typer.Argument(help="The earlier run.")],
    run_b: Annotated[int, typer.Argument(help="The run to compare with it.")],
    json_out: JsonOpt = False,
    workspace: ReadWorkspaceOpt = None,
) -> None:
    """Compare two stored runs: their sources, the rungs whose status changed, each case's time."""
    doc = api.diff(run_a, run_b, existing_workspace(workspace))
    if json_out:
        print(dumps(doc))
        return
    render.print_diff(out, doc)


@app.command()
def problem(
    path: Annotated[Path, typer.Argument(help="Problem folder or KernelBench file.")],
    json_out: JsonOpt = False,
) -> None:
    """What a problem holds: its test and benchmark cases, tolerance and cost model (read from
    its files as data: nothing of it runs)."""
    spec = api.problem(path)
    if json_out:
        print(dumps(views.problem_doc(spec)))
        return
    render.print_problem(out, spec)


@app.command()
def mcp(workspace: WorkspaceOpt = None) -> None:
    """Serve the verbs as tools of a Model Context Protocol server on stdio, for coding agents."""
    from rung import mcp_server

    mcp_server.serve(workspace)


@app.command()
def config(ctx: typer.Context, json_out: JsonOpt = False) -> None:
    """Every setting: its value and where it came from (flag, environment, project file, default)."""
    resolved: dict[str, settings.Resolved] = ctx.obj
    project = settings.find_project_file(Path.cwd())
    if json_out:
        rows = [
            {
                "name": settings.field(n),
                "env": n,
                "flag": settings.flag(n),
                "value": r.value,
                "default": knobs.KNOBS[n].default,
                "source": r.source,
            }
            for n, r in resolved.items()
        ]
        print(dumps({"schema": SCHEMA, "project_file": str(project) if project else None, "settings": rows}))
        return
    where = project or f"no rung.toml or pyproject.toml with [tool.rung] in {Path.cwd()} or above"
    out.print(f"project file: {where}", style="dim", markup=False)
    width = max(len(settings.field(n)) for n in resolved)
    for n, r in resolved.items():
        out.print(f"{settings.field(n):<{width}}  {r.value!r:<12}  {r.source}", markup=False)


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


context_app = typer.Typer(
    no_args_is_help=True, help="Search documentation and example code indexed in .rung/context.db."
)
app.add_typer(context_app, name="context")


@context_app.command("add")
def context_add(
    targets: Annotated[
        list[str] | None, typer.Argument(help="Files, folders or installed packages (by import name).")
    ] = None,
    builtin: Annotated[
        bool,
        typer.Option(
            "--builtin",
            help="Also the built-in sources found here: the DSL packages (Triton, CuTe DSL, TileLang) "
            "and the CUDA toolkit's PTX and runtime headers.",
        ),
    ] = False,
    json_out: JsonOpt = False,
    workspace: WorkspaceOpt = None,
) -> None:
    """Index text, Python, CUDA and PTX files; adding a source again replaces it."""
    from rung.context_sources import BUILTINS

    if not targets and not builtin:
        raise RungError("context add needs a PATH_OR_PACKAGE or --builtin")
    added = {t: api.context_add(t, workspace) for t in targets or []}
    builtins = api.context_builtin(workspace) if builtin else {}
    absent = [name for name in BUILTINS if builtin and name not in builtins]
    added.update(builtins)
    if json_out:
        print(dumps({"schema": SCHEMA, "added": added, "absent": absent}))
        return
    for source, count in added.items():
        out.print(f"{source}: {count} snippets", markup=False)
    if absent:
        out.print(f"not installed: {', '.join(absent)}", style="dim")


@context_app.command("search")
def context_search(
    query: Annotated[list[str], typer.Argument(help="Free text: words, names, `tl.dot`, `cp.async.bulk`.")],
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="Most snippets to show.")] = 8,
    json_out: JsonOpt = False,
    workspace: WorkspaceOpt = None,
) -> None:
    """The best snippets for QUERY, best first, with file and first line."""
    text = " ".join(query)
    snippets = api.context_search(text, limit, workspace)
    if json_out:
        print(dumps(views.context_doc(text, snippets)))
        return
    if not snippets and not api.context_sources(workspace):
        out.print("nothing indexed: rung context add PATH_OR_PACKAGE, or rung context add --builtin")
    elif not snippets:
        out.print(f"no snippets match {text!r} (rung context sources lists what is indexed)", markup=False)
    for s in snippets:
        out.print(f"{s.path}:{s.line}", markup=False)
        out.print("\n".join("    " + line for line in s.text.splitlines()[:8]), style="dim", markup=False)


@context_app.command("sources")
def context_sources(json_out: JsonOpt = False, workspace: WorkspaceOpt = None) -> None:
    """Every indexed source with its number of snippets."""
    sources = api.context_sources(workspace)
    if json_out:
        print(dumps({"schema": SCHEMA, "sources": [{"source": s, "snippets": n} for s, n in sources]}))
        return
    if not sources:
        out.print("nothing indexed: rung context add PATH_OR_PACKAGE, or rung context add --builtin")
    for source, count in sources:
        out.print(f"{source}: {count} snippets", markup=False)


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


def _with_settings(fn: Any) -> Any:
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


for _typer in (app, cache_app, context_app):
    for _info in _typer.registered_commands:
        _info.callback = _with_settings(_info.callback)


def main() -> None:
    """Entry point: Typer handles usage errors (exit 2); rung's own errors are one line, exit 2.
    The controller is not dumpable (its memory and environment, API keys included, stay out of
    other processes' reach) and takes SIGTERM as an interrupt."""
    confine.make_undumpable()
    runner.on_sigterm()
    try:
        app()
    except RungError as e:
        err.print(f"rung: error: {e}", markup=False)
        sys.exit(2)
