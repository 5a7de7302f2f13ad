"""The optimize loop judged by numbers: one agent, every shipped problem, one fixed budget.

For each problem under problems/ the loop starts from its `solutions/correct/naive.py` in a
fresh workspace and runs `rung optimize` with the agent and budget given; per problem the table
has the speedup reached over the reference and over the start (geometric means over the
benchmark cases), the best version's % of roofline, candidates climbed and passing, tokens,
dollars, wall time and why the loop stopped. A change to the prompt or the tools is judged by
running this before and after with the same agent and budget.

Agents:
- `llm`: a model through its SDK (`--provider`, `--model`, `--base-url`, or `--llm-config`;
  the key from ANTHROPIC_API_KEY / OPENAI_API_KEY);
- `tune`: Optuna over the start's TUNE values (problems whose naive version has none are
  skipped, saying so);
- `replay`: recorded tool-using conversations, no key: one per shipped correct version of the
  problem, in which the model compiles it, reads the history, checks it on the whole ladder,
  and answers with it (rung.agents.recorded plays them through the real SDK). It measures the
  loop and its tools, not a model: the versions are the shipped ones.

    python3 bench/agent_eval.py --agent replay --rounds 6 --out out/agent_eval
    python3 bench/agent_eval.py --agent llm --provider anthropic --model MODEL --rounds 8 --max-usd 5
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from rung.agents.prompt import fenced

ROOT = Path(__file__).resolve().parents[1]


def conversations(problem: Path) -> dict[str, Any]:
    """The replay agent's recording for `problem`: a conversation per shipped correct version."""
    talks = []
    for version in sorted((problem / "solutions" / "correct").glob("*.py")):
        if version.name == "naive.py":
            continue
        source = version.read_text()
        talks.append(
            [
                {"tools": [{"name": "compile", "args": {"source": source}}, {"name": "history", "args": {}}]},
                {"tools": [{"name": "check", "args": {"source": source}}]},
                {"text": f"NOTE: {version.stem}\n{fenced(source, 'python')}\n"},
            ]
        )
    return {"provider": "anthropic", "conversations": talks}


def optimize(problem: Path, args: argparse.Namespace, workspace: Path) -> list[dict[str, Any]]:
    """`rung optimize --jsonl` on `problem`; its events, the summary last."""
    start = problem / "solutions" / "correct" / "naive.py"
    command = [sys.executable, "-m", "rung", "optimize", str(problem), "--agent", args.agent]
    command += ["--from", str(start), "--rounds", str(args.rounds), "--parallel", str(args.parallel)]
    command += ["--jsonl", "-w", str(workspace)]
    if args.agent == "replay":
        recording = workspace / f"{problem.name}.conversations.json"
        recording.write_text(json.dumps(conversations(problem)))
        command += ["--replay", str(recording)]
    for flag in (
        "provider",
        "model",
        "base_url",
        "llm_config",
        "max_usd",
        "max_tokens",
        "max_minutes",
        "backend",
    ):
        value = getattr(args, flag)
        if value is not None:
            command += [f"--{flag.replace('_', '-')}", str(value)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=args.timeout_s)
    if done.returncode not in (0, 1) or not done.stdout.strip():
        raise RuntimeError(
            f"{problem.name}: rung optimize exited {done.returncode}: {done.stderr.strip()[-500:]}"
        )
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def history(problem: Path, workspace: Path) -> dict[int, dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, "-m", "rung", "history", str(problem), "--json", "-w", str(workspace)],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return {row["run"]: row for row in json.loads(done.stdout)["runs"]}


def _geomean_ms(row: dict[str, Any]) -> float | None:
    medians = [c["median_ms"] for c in row.get("cases", []) if c.get("median_ms")]
    return math.exp(sum(math.log(m) for m in medians) / len(medians)) if medians else None


def evaluate(problem: Path, args: argparse.Namespace) -> dict[str, Any]:
    start = problem / "solutions" / "correct" / "naive.py"
    if not start.is_file():
        return {"problem": problem.name, "skipped": "no solutions/correct/naive.py to start from"}
    if args.agent == "tune" and "TUNE" not in start.read_text():
        return {"problem": problem.name, "skipped": "its naive version declares no TUNE values"}
    with tempfile.TemporaryDirectory(prefix="rung-agent-eval-") as folder:
        began = time.monotonic()
        events = optimize(problem, args, Path(folder))
        rows = history(problem, Path(folder))
    first = next(e for e in events if e["event"] == "start")
    summary = events[-1]
    best, begun = rows[summary["best"]["run"]], rows[first["run"]]
    best_ms, start_ms = _geomean_ms(best), _geomean_ms(begun)
    candidates = summary["candidates"]
    return {
        "problem": problem.name,
        "agent": args.agent,
        "best_run": best["run"],
        "best_path": best["path"],
        "verdict": best["verdict"],
        "speedup_vs_reference": best.get("speedup_vs_reference"),
        "speedup_vs_start": start_ms / best_ms if best_ms and start_ms else None,
        "pct_of_roofline": best.get("pct_of_roofline"),
        "candidates": len(candidates),
        "passing": sum(1 for c in candidates if c["verdict"] == "PASS"),
        "no_version": len(summary["no_version"]),
        "tool_calls": sum(1 for e in events if e["event"] == "tool"),
        "tokens": summary["spent"]["tokens"],
        "usd": summary["spent"]["usd"],
        "wall_s": round(time.monotonic() - began, 1),
        "reason": summary["reason"],
    }


def table(results: list[dict[str, Any]]) -> str:
    def fmt(v: Any, spec: str) -> str:
        return "-" if v is None else format(v, spec)

    lines = [
        "| problem | best | x reference | x start | % roofline | candidates (pass) | tools | tokens | $ | wall s | stopped |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in results:
        if "skipped" in r:
            lines.append(f"| {r['problem']} | skipped: {r['skipped']} |" + " |" * 9)
            continue
        lines.append(
            f"| {r['problem']} | run {r['best_run']} {Path(r['best_path']).name} | "
            f"{fmt(r['speedup_vs_reference'], '.2f')} | {fmt(r['speedup_vs_start'], '.2f')} | "
            f"{fmt(r['pct_of_roofline'], '.1%')} | {r['candidates']} ({r['passing']}) | {r['tool_calls']} | "
            f"{r['tokens']} | {fmt(r['usd'], '.2f')} | {r['wall_s']} | {r['reason']} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agent", choices=("llm", "tune", "replay"), required=True)
    parser.add_argument("--problems", nargs="*", help="names under problems/ (default: every one)")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--parallel", type=int, default=1)
    parser.add_argument("--max-usd", type=float)
    parser.add_argument("--max-tokens", type=int)
    parser.add_argument("--max-minutes", type=float)
    parser.add_argument("--provider")
    parser.add_argument("--model")
    parser.add_argument("--base-url")
    parser.add_argument("--llm-config")
    parser.add_argument("--backend")
    parser.add_argument("--timeout-s", type=float, default=3600, help="per problem")
    parser.add_argument("--out", type=Path, help="folder for agent_eval.json and agent_eval.md")
    args = parser.parse_args()
    names = args.problems or sorted(
        p.name for p in (ROOT / "problems").iterdir() if (p / "problem.py").is_file()
    )
    results = []
    for name in names:
        results.append(evaluate(ROOT / "problems" / name, args))
        print(json.dumps(results[-1]), flush=True)
    text = table(results)
    print(text)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "agent_eval.json").write_text(json.dumps(results, indent=1))
        (args.out / "agent_eval.md").write_text(text + "\n")


if __name__ == "__main__":
    main()
