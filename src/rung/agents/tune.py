"""tune: varies the module-level values a solution lists in `TUNE = {name: [values, ...]}`.

Every variant is the solution's source with those assignments rewritten, so it is a real version
that climbs the whole ladder. The search is Optuna's: a grid in random order where the whole
space fits the loop's budget, else TPE, which picks each next combination from how the earlier
ones timed (the geometric-mean median over the benchmark cases; a version that fails is a failed
trial). Each run draws its own seed (shown in every proposal's note). The study lives in the
workspace (`.rung/tune/<study>.jsonl`, Optuna's journal), named by the solution's source with the
tuned values blanked and by its TUNE space, so `--from` the same solution (or any of its
variants) resumes it: combinations already timed are known and not climbed again.
"""

from __future__ import annotations

import ast
import hashlib
import itertools
import random
import secrets
from pathlib import Path
from typing import Any

from rung.agents import LoopState, Proposal
from rung.errors import UsageError

try:
    import optuna
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend
    from optuna.trial import TrialState
except ImportError:  # the tune extra
    optuna = None  # type: ignore[assignment]

ASKS_PER_PROPOSAL = 64  # asks for a combination not yet tried before giving up on the space


class TuneAgent:
    name = "tune"

    def __init__(
        self, source: str, budget: int = 16, study_dir: Path | None = None, seed: int | None = None
    ) -> None:
        if optuna is None:
            raise UsageError("--agent tune needs Optuna: pip install 'rung[tune]'")
        self.source = source
        self.assignments = _assignments(source)
        self.space = _tune_space(source, self.assignments)
        self.seed = secrets.randbits(31) if seed is None else seed
        self.choices = {n: [repr(v) for v in vs] for n, vs in self.space.items()}
        self.start = self._params_of(source)  # climbed already, as the loop's starting version
        grid = len(list(itertools.product(*self.space.values()))) <= budget
        # Optuna's grid sampler stops the study from inside `tell` when the grid is done, which
        # ask-and-tell use refuses: a grid here is every combination queued in a seeded order.
        sampler = (
            optuna.samplers.RandomSampler(seed=self.seed)
            if grid
            else optuna.samplers.TPESampler(seed=self.seed)
        )
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        name = study_name(source, self.assignments, self.space)
        storage = None
        if study_dir is not None:
            study_dir.mkdir(parents=True, exist_ok=True)
            storage = JournalStorage(JournalFileBackend(str(study_dir / f"{name}.jsonl")))
        self.study = optuna.create_study(
            study_name=name, storage=storage, sampler=sampler, direction="minimize", load_if_exists=True
        )
        for old in self.study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
            self.study.tell(old.number, state=TrialState.FAIL)  # an earlier run stopped before its verdict
        self.pending: dict[str, int] = {}  # source hash -> trial number, until its run comes back
        self.sampler_name = "grid" if grid else "TPE"
        if grid:
            combos = [
                dict(zip(self.choices, c, strict=True)) for c in itertools.product(*self.choices.values())
            ]
            random.Random(self.seed).shuffle(combos)
            for params in combos:
                if params != self.start:
                    self.study.enqueue_trial(params, skip_if_exists=True)

    def propose(self, state: LoopState, k: int) -> list[Proposal]:
        self._tell(state)
        proposals = []
        for _ in range(k):
            trial = self._ask_new()
            if trial is None:
                break
            values = {n: ast.literal_eval(trial.params[n]) for n in self.space}
            source = rewrite(self.source, self.assignments, values)
            self.pending[_sha(source)] = trial.number
            note = ", ".join(f"{n}={v!r}" for n, v in values.items())
            proposals.append(
                Proposal(source, f"{note} ({self.sampler_name} trial {trial.number}, seed {self.seed})")
            )
        return proposals

    def _tell(self, state: LoopState) -> None:
        """Each climbed version's time back to its trial; the starting version's too, once."""
        from rung.optimize import score  # the loop's own measure of a version

        for tried in [state.best, *state.tried]:
            sha = _sha(tried.source)
            number = self.pending.pop(sha, None)
            timed = score(tried.run)
            if number is not None:
                if timed is None:
                    self.study.tell(number, state=TrialState.FAIL)
                else:
                    self.study.tell(number, timed[0])
            elif timed is not None:
                params = self._params_of(tried.source)
                if params is not None and not self._in_study(params):
                    self.study.add_trial(
                        optuna.trial.create_trial(
                            params=params, distributions=self._distributions(), value=timed[0]
                        )
                    )

    def _ask_new(self) -> Any:
        """A trial whose combination no earlier trial holds; None when none is left to find."""
        for _ in range(ASKS_PER_PROPOSAL):
            if self.sampler_name == "grid" and self._grid_done():
                return None
            trial = self.study.ask(self._distributions())
            if not self._known(trial.params, but=trial.number):
                return trial
            self.study.tell(trial.number, state=TrialState.PRUNED)  # a repeat: tried already
        return None

    def _grid_done(self) -> bool:
        """Every combination climbed (the start's included) or on its way."""
        seen = {
            tuple(sorted(t.params.items()))
            for t in self.study.get_trials(deepcopy=False)
            if t.state not in (TrialState.PRUNED, TrialState.WAITING)
        }
        if self.start is not None:
            seen.add(tuple(sorted(self.start.items())))
        return len(seen) >= len(list(itertools.product(*self.choices.values())))

    def _known(self, params: dict[str, str] | None, but: int = -1) -> bool:
        """Climbed already: the starting version's values, or a trial's of this study."""
        return params is None or params == self.start or self._in_study(params, but)

    def _in_study(self, params: dict[str, str], but: int = -1) -> bool:
        return any(
            t.params == params and t.number != but and t.state != TrialState.PRUNED
            for t in self.study.get_trials(deepcopy=False)
        )

    def _params_of(self, source: str) -> dict[str, str] | None:
        """The TUNE values a version's source assigns, as trial parameters (None if off the space)."""
        try:
            found = _assignments(source)
            params = {n: repr(ast.literal_eval(found[n][2])) for n in self.space}
        except (KeyError, ValueError, SyntaxError):
            return None
        return params if all(params[n] in self.choices[n] for n in params) else None

    def _distributions(self) -> dict[str, Any]:
        return {n: optuna.distributions.CategoricalDistribution(c) for n, c in self.choices.items()}


def study_name(source: str, assignments: dict[str, tuple[int, int, str]], space: dict[str, list[Any]]) -> str:
    """The same kernel with the same TUNE space, whatever values it currently holds."""
    blank = rewrite(source, assignments, dict.fromkeys(space, None))
    return "tune-" + hashlib.sha256(blank.encode()).hexdigest()[:16]


def _sha(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()


def _assignments(source: str) -> dict[str, tuple[int, int, str]]:
    """Module-level `NAME = literal`: name -> (start offset, end offset, literal source)."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    starts = [0, *itertools.accumulate(len(x) for x in lines)]
    found = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            v = node.value
            assert v.end_lineno is not None and v.end_col_offset is not None
            begin = starts[v.lineno - 1] + v.col_offset
            end = starts[v.end_lineno - 1] + v.end_col_offset
            found[node.targets[0].id] = (begin, end, source[begin:end])
    return found


def _tune_space(source: str, assignments: dict[str, tuple[int, int, str]]) -> dict[str, list[Any]]:
    if "TUNE" not in assignments:
        raise UsageError("the solution declares no TUNE = {name: [values, ...]}")
    try:
        space = ast.literal_eval(assignments["TUNE"][2])
    except ValueError:
        raise UsageError("TUNE must be a literal dict of lists") from None
    if not isinstance(space, dict) or not all(isinstance(v, list) and v for v in space.values()):
        raise UsageError("TUNE must map names to non-empty lists of values")
    for name in space:
        if name not in assignments or name == "TUNE":
            raise UsageError(f"TUNE names {name}, which the source does not assign at module level")
        try:
            ast.literal_eval(assignments[name][2])
        except ValueError:
            raise UsageError(f"TUNE names {name}, whose value is not a literal") from None
    return space


def rewrite(source: str, assignments: dict[str, tuple[int, int, str]], values: dict[str, Any]) -> str:
    """`source` with each named module-level value replaced, last offsets first."""
    for name in sorted(values, key=lambda n: assignments[n][0], reverse=True):
        begin, end, _ = assignments[name]
        source = source[:begin] + repr(values[name]) + source[end:]
    return source
