"""`rung optimize`, the loop of propose and climb, and `rung hint`, which steers it while it runs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from rung import (
    api,
    knobs,
    render,
    views,
)
from rung.cli.app import JsonOpt, ReadWorkspaceOpt, WorkspaceOpt, app, out
from rung.errors import RungError
from rung.problem_data import problem_name
from rung.spec import SCHEMA, Run, dumps
from rung.store import existing_workspace


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
    name = problem_name(problem)
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

    name = problem_name(problem)
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
