"""What the llm agent is told: the problem, the device, the best versions with their ladders, the
last failures trimmed to what matters, the person's hints and context snippets; and how its reply
is read back into one solution file.

The problem's files are read as text (the controller never imports them). Failures are trimmed
to the rungs that failed and the first lines of each message: the compile error lines, the first
mismatching indices with got and expected, the guard that fired.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

from rung import chosen
from rung.agents import LoopState, Tried, idioms
from rung.problem_data import problem_format
from rung.render import figures
from rung.spec import Run, Status

SYSTEM = """\
You write fast, correct GPU kernels. Every version you write is loaded, compiled, run, checked
against a reference (including for caching, aliasing, touched inputs and determinism), timed,
and compared with the hardware's roofline. A fast but wrong kernel is worthless. Reply with a
first line `NOTE: <what this version changes, in a few words>`, then exactly one complete Python
file in one ```python fenced block. Nothing outside the block is run. Where tools are offered,
read what you need before you answer (a draft's compile facts, a run's SASS or profile, the
documentation); the reply that calls no tool is your answer."""

MESSAGE_LINES = 12  # of a failed rung's message
SOURCE_CHARS = 12_000  # of each problem file
TRIED_SHOWN = 3  # passing versions besides the best, and failures, each


def entry_point(problem_path: str) -> str:
    """What a solution must define: KernelBench problems (a file) want `class ModelNew`."""
    return "class ModelNew" if problem_format(Path(problem_path)) == "kernelbench" else "def custom_kernel"


def problem_files(problem_path: str) -> list[Path]:
    p = Path(problem_path)
    if p.is_file():
        return [p]
    names = ("problem.py", "reference.py", "task.yml")
    return [p / n for n in names if (p / n).is_file()]


def ladder_text(run: Run) -> str:
    lines = [f"run {run.id}: {run.verdict}"]
    for r in run.rungs:
        if r.status == Status.SKIPPED:
            lines.append(f"  {r.name:<9} SKIPPED  {r.message.splitlines()[0] if r.message else ''}")
            continue
        message = r.message.splitlines()
        shown = message[:MESSAGE_LINES] if r.status != Status.OK else message[:3]
        more = f"  [... {len(message) - len(shown)} more lines]" if len(message) > len(shown) else ""
        head = f"  {r.name:<9} {r.status.value:<8} {figures(r)}".rstrip()
        lines.append(head + ("\n    " + "\n    ".join(shown) if shown else "") + more)
    return "\n".join(lines)


def fenced(text: str, lang: str = "") -> str:
    """`text` in a code fence longer than any run of backticks inside it, so it cannot close early."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{text.rstrip()}\n{fence}"


def _section(title: str, body: str) -> str:
    return f"## {title}\n\n{body.strip()}\n"


def _ceilings(state: LoopState) -> str:
    d = state.device
    if not d.ceilings:
        return (
            f"{d.name}: nothing is timed here, correctness only. Kernels are compiled for sm_90 (H100/H200)."
        )
    rows = "\n".join(f"- {k}: {v:,.1f}" for k, v in d.ceilings.items() if isinstance(v, (int, float)))
    return f"{d.name} ({d.arch}), measured ceilings:\n{rows}"


def _problem(state: LoopState) -> str:
    p = state.problem
    files = [(f.name, f.read_text(errors="replace")) for f in problem_files(p.path)]
    doc = p.doc.strip()
    parts = [doc] if doc and not any(doc[:200] in text for _, text in files) else []
    for name, text in files:
        cut = f"\n# [... {len(text) - SOURCE_CHARS} more characters]" if len(text) > SOURCE_CHARS else ""
        parts.append(f"{name}:\n" + fenced(text[:SOURCE_CHARS] + cut, "python"))
    parts.append(f"Test cases (checked for correctness): {p.tests}")
    parts.append(f"Benchmark cases (checked, then timed): {p.benchmarks}")
    if p.tolerance:
        parts.append(f"Tolerance: {p.tolerance}")
    return "\n\n".join(parts)


def _version(t: Tried, with_source: bool) -> str:
    body = ladder_text(t.run)
    if t.profile is not None:
        body += "\n\n" + _profile_text(t.profile)
    if with_source:
        body += "\n\nsource:\n" + fenced(t.source, "python")
    return body


def _profile_text(run: Run) -> str:
    """The chosen version's profile climb: its deferred rungs' summaries whole (under 40 lines each)."""
    shown = [r for r in run.rungs if r.name in chosen.DEFERRED and r.status != Status.SKIPPED]
    lines = [f"profiled as run {run.id} (its artifacts under .rung/runs/{run.id}/):"]
    for r in shown:
        lines.append(f"  {r.name:<9} {r.status.value:<8} {figures(r)}".rstrip())
        lines.extend("    " + line for line in r.message.splitlines())
    return "\n".join(lines)


def build(state: LoopState, snippets: list[Any], tools: bool = False) -> str:
    """The whole prompt for one proposal."""
    passing = [t for t in state.tried if t.run.ok and t.run.id != state.best.run.id]
    failing = [t for t in state.tried if not t.run.ok and t.run.id != state.best.run.id]
    best_title = "The version to repair (it fails)" if state.repairing else "Best version so far"
    parts = [
        _section(f"Problem: {state.problem.name}", _problem(state)),
        _section("Device", _ceilings(state)),
        _section("Language", idioms.section(state.backend)),
        _section(best_title, _version(state.best, with_source=True)),
    ]
    if passing:
        parts.append(
            _section(
                "Other passing versions (most recent)",
                "\n\n".join(_version(t, False) for t in passing[-TRIED_SHOWN:]),
            )
        )
    if failing or state.failures:
        body = "\n\n".join(_version(t, False) for t in failing[-TRIED_SHOWN:])
        refused = "\n".join(f"- {why}" for why in state.failures[-TRIED_SHOWN:])
        parts.append(
            _section(
                "Last failures",
                body + (f"\n\nReplies that gave no version:\n{refused}" if refused else ""),
            )
        )
    if snippets:
        parts.append(
            _section(
                "Context (documentation and examples)",
                "\n\n".join(f"{s.path}:{s.line}\n" + fenced(s.text.strip()) for s in snippets),
            )
        )
    if state.hints:
        parts.append(
            _section("Guidance from the person you work for", "\n".join(f"- {h}" for h in state.hints))
        )
    parts.append(_section("Task", _task(state, tools)))
    return "\n".join(parts)


def _task(state: LoopState, tools: bool) -> str:
    name = entry_point(state.problem.path).split()[1]
    if state.repairing:
        task = (
            f"The version above fails. Make it pass: a complete solution file defining `{name}` "
            "with the same signature, that fixes what the failed rung's message and figures say "
            "and changes nothing else. Speed comes after."
        )
    else:
        task = (
            f"Write the next version: a complete solution file defining `{name}` with the same "
            "signature as the best version, faster than it and still exactly as correct. Keep what "
            "works; change one idea at a time; read the figures above before you change."
        )
    if tools:
        task += (
            " Tools: `compile` a draft (seconds, no GPU), `check` it on the whole ladder, "
            "`read_artifact` the files a run kept, `search_context`, `diff`, `history`, `show`."
        )
    return task


# A fenced block: an opening run of 3+ backticks at a line start, closed by the same run alone on a line.
_BLOCK = re.compile(r"^(`{3,})[ \t]*(?:python3?|py)?[ \t]*\n(.*?)^\1[ \t]*$", re.DOTALL | re.MULTILINE)


def read_reply(text: str, entry: str) -> tuple[str, str, str]:
    """(source, note, error) from a reply: the last fenced block that defines the entry point.
    No such block, or one that does not parse, gives an empty source and the reason."""
    note_match = re.search(r"^\s*NOTE:\s*(.+)$", text, re.MULTILINE)
    note = note_match.group(1).strip()[:200] if note_match else "llm version"
    blocks = [b for _, b in _BLOCK.findall(text) if re.search(rf"^{entry}\b", b, re.MULTILINE)]
    if not blocks:
        return "", note, f"the reply holds no complete solution file (no ```python block with `{entry}`)"
    source = blocks[-1].strip() + "\n"
    try:
        ast.parse(source)
    except SyntaxError as e:
        return "", note, f"the solution in the reply does not parse: line {e.lineno}: {e.msg}"
    return source, note, ""
