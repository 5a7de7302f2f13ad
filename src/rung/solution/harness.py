"""What the solution process holds: the solution's module, its entry point, the shared buffers.

Every call into the solution goes through `Harness.call`: outputs it allocates are poisoned, Triton
launches are counted (or, on request, suppressed: a kernel whose output is right without it did
no work; or their stores perturbed: an answer that flows through them changes element by
element), on request and on a GPU the names of the kernels it ran are recorded (every backend's,
from CUPTI), the device is synchronised so an asynchronous error surfaces in the call that caused
it, and each returned tensor is described and copied into the judge's slot for it.

Everything here runs in the solution's own process, where its code can replace any of it: what
the harness reports is a claim, and the judge decides what it can observe itself (inputs read
back, outputs copied out, threads counted in /proc). Library threads are started before the
solution is imported (`start_library_threads`), so the judge's count of threads from then on is
the solution's.
"""

from __future__ import annotations

import builtins
import importlib.abc
import sys
import threading
import time
import traceback
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch

from rung.common.messages import CallReport, FormatSide, Harm, OutputMeta, SolutionStart
from rung.common.poison import poisoned_allocations
from rung.common.shm import Exporter, TensorSpec, dtype_name
from rung.common.trees import decode, leaves, shares_memory, tensor_list
from rung.solution.kernel_names import KernelNames

# Functions a solution must leave alone: rung times and checks with them.
WATCHED = {
    "time.perf_counter": lambda: time.perf_counter,
    "time.time": lambda: time.time,
    "torch.cuda.synchronize": lambda: torch.cuda.synchronize,
    "torch.cuda.Event": lambda: torch.cuda.Event,
    "torch.cuda.Event.record": lambda: torch.cuda.Event.record,
    "torch.cuda.Event.elapsed_time": lambda: torch.cuda.Event.elapsed_time,
    "torch.cuda._sleep": lambda: torch.cuda._sleep,
    "torch.allclose": lambda: torch.allclose,
    "torch.equal": lambda: torch.equal,
    "torch.testing.assert_close": lambda: torch.testing.assert_close,
    "torch.Tensor.clone": lambda: torch.Tensor.clone,
    "torch.Tensor.copy_": lambda: torch.Tensor.copy_,
    "torch.Tensor.__eq__": lambda: torch.Tensor.__eq__,
}
WEIGHT_SEED = 42  # KernelBench: the seed both Model and ModelNew are built after


class ReferenceImport(ImportError):
    """The solution tried to import the problem's reference, which is the judge's alone."""


class _Forbidden(importlib.abc.MetaPathFinder):
    def __init__(self, names: set[str]) -> None:
        self.names = names

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> None:
        if fullname in self.names or (fullname.split(".")[0] == "rung" and ".judge" in fullname):
            raise ReferenceImport(
                f"{fullname} belongs to the judge: a solution may not import the problem's reference"
            )
        return None


class Harness:
    def __init__(self, start: SolutionStart) -> None:
        self.source = Path(start.source)
        self.entry_name = "custom_kernel"
        self.format = "native"
        self.init_inputs: list[Any] = []
        self.reference_names: set[str] = set()
        self.device = "cuda" if torch.cuda.is_available() else "cpu"
        self.exporter = Exporter()
        self.launches = _launch_counter()
        self.watched = {name: get() for name, get in WATCHED.items()}
        self.own_threads: set[int] = set()
        # Every output returned so far, by weak reference to its storage (a storage's Python
        # object lives exactly as long as its memory): one still alive that a later output
        # shares memory with is a buffer the solution keeps and hands back, however many calls
        # apart; one the solution let go is gone, and its memory free to be handed out again.
        self._returned: list[weakref.ref[Any]] = []
        self._returned_objects: list[weakref.ref[torch.Tensor]] = []
        self.imported: set[str] = set()  # modules the solution's import brought in or asked for
        self.perturb_next: int | None = None  # a seed: the next call's Triton stores perturbed
        self._module: Any = None
        self.import_build_s = 0.0  # building CUDA C++ extensions at import (torch's load_inline)
        self._entry: Any = None
        if start.side is not None:  # known at the start (the profile target)
            self.configure(start.side)
        start_library_threads(self.device)

    def configure(self, side: FormatSide) -> None:
        """The format's side, before the solution is imported: its entry point, the reference's
        names and modules it may not use, the folders of helpers it shares."""
        self.entry_name, self.format = side.entry, side.format
        self.init_inputs = list(side.init_inputs)
        self.reference_names = set(side.reference_names)
        sys.meta_path.insert(0, _Forbidden(set(side.forbidden_modules)))
        for folder in side.lib_dirs:
            sys.path.insert(0, str(folder))

    @property
    def module(self) -> Any:
        if self._module is None:
            from rung.backends.cuda_backend import import_builds
            from rung.common.loader import import_file

            with import_builds(self.source, self.device) as builds, _imports_seen("rung_solution") as seen:
                self._module = import_file(self.source, "rung_solution")
            self.imported = seen
            self.import_build_s = builds.seconds
        return self._module

    @property
    def entry(self) -> Any:
        if self._entry is None:
            self._entry = entry_point(self.module, self.entry_name, self.format, self.init_inputs)
        return self._entry

    def tensor(self, key: int) -> torch.Tensor:
        return self.exporter.buffers[key]

    def inputs(self, tree: Any) -> tuple[Any, ...]:
        return tuple(decode(tree, self.tensor))

    def call(
        self,
        tree: Any,
        slots: list[int],
        suppress_launches: bool = False,
        kernel_names: bool = False,
        perturb: int | None = None,
    ) -> CallReport:
        """One call on the inputs in `tree`; each returned tensor copied into its slot where it fits.
        With `kernel_names`, on a GPU, the report names every kernel the call ran; with `perturb`
        (a seed), every value an interpreted Triton kernel stores is changed element by element."""
        inputs = self.inputs(tree)
        fn = self.entry
        before = self.launches.count if self.launches else 0
        if perturb is not None and self.launches is not None:
            self.launches.start_perturbing(perturb)
        seen = KernelNames(kernel_names and self.device == "cuda")
        start = time.perf_counter()
        try:
            with poisoned_allocations(), _Suppressed(self.launches if suppress_launches else None), seen:
                value = fn(*inputs)
                self.sync()
        except BaseException as e:  # the solution's own exceptions, SystemExit included
            traceback.print_exc()
            return CallReport("", error=self.where(e), error_type=type(e).__name__)
        finally:
            if self.launches is not None:
                self.launches.perturb = None
        seconds = time.perf_counter() - start
        launches = (self.launches.count if self.launches else 0) - before
        report = self.describe(value, inputs, slots)
        report.seconds, report.launches = seconds, launches
        report.kernels, report.kernels_error = seen.names, seen.error
        return report

    def describe(self, value: Any, inputs: tuple[Any, ...], slots: list[int]) -> CallReport:
        outs = tensor_list(value)
        if outs is None:
            return CallReport(kind_of(value))
        returned = "tensor" if isinstance(value, torch.Tensor) else f"{type(value).__name__} of {len(outs)}"
        metas = [self._meta(o, inputs, slots[j] if j < len(slots) else None) for j, o in enumerate(outs)]
        self.sync()  # the copies are in the slots before the judge reads them
        self._returned = [r for r in self._returned if r() is not None]
        self._returned += [weakref.ref(o.untyped_storage()) for o in outs if o.device.type != "meta"]
        self._returned_objects = [r for r in self._returned_objects if r() is not None]
        self._returned_objects += [weakref.ref(o) for o in outs]
        return CallReport(returned, metas)

    def _meta(self, out: torch.Tensor, inputs: tuple[Any, ...], slot: int | None) -> OutputMeta:
        spec = TensorSpec.of(out)
        copied = False
        if slot is not None:
            target = self.tensor(slot)
            if TensorSpec.of(target) == spec:
                with torch.no_grad():
                    target.copy_(out)
                copied = True
        kept = [s for s in (r() for r in self._returned) if s is not None]
        mine = out.untyped_storage() if out.device.type != "meta" else None
        return OutputMeta(
            type=type(out).__name__,
            plain=type(out) is torch.Tensor,
            shape=list(spec.shape),
            dtype=dtype_name(out.dtype),
            device=str(out.device),
            contiguous=bool(out.is_contiguous()),
            copied=copied,
            alias_of_input=next((i for i, t in enumerate(leaves(inputs)) if shares_memory(out, t)), None),
            same_object_as_before=any(r() is out for r in self._returned_objects),
            reuses_earlier_output=mine is not None and any(_overlap(mine, s) for s in kept),
        )

    def sync(self) -> None:
        if self.device == "cuda":
            torch.cuda.synchronize()

    def harm(self) -> Harm:
        patched = [name for name, get in WATCHED.items() if get() is not self.watched[name]]
        return Harm(patched, sum(1 for ident in sys._current_frames() if ident not in self._mine()))

    def threads(self) -> dict[int, str]:
        return running_threads(self._mine())

    def _mine(self) -> set[int]:
        return self.own_threads | {threading.main_thread().ident or 0}

    def where(self, e: BaseException) -> str:
        """'ExcType: message (at file.py:LINE in fn)', naming the deepest frame in the solution."""
        frames = traceback.extract_tb(e.__traceback__)
        mine = str(self.source.resolve())
        user = [f for f in frames if str(Path(f.filename).resolve()) == mine] or frames[-1:]
        text = str(e).strip().splitlines()
        first = text[0] if text else ""
        loc = f" (at {Path(user[-1].filename).name}:{user[-1].lineno} in {user[-1].name})" if user else ""
        return f"{type(e).__name__}: {first}{loc}"


def _overlap(a: Any, b: Any) -> bool:
    """Whether two storages' memory overlaps (the same storage, or two over one buffer)."""
    if a.device != b.device:
        return False
    return bool(a.data_ptr() < b.data_ptr() + b.nbytes() and b.data_ptr() < a.data_ptr() + a.nbytes())


@contextmanager
def _imports_seen(module_name: str) -> Iterator[set[str]]:
    """Inside it, the dotted name (and its parents) of every module an import statement of
    `module_name`'s own code asked for, whether or not it was loaded already: what a solution
    imported when it was imported, not what its source text names (a dead `if False: import
    cutlass` asks for nothing), nor what the libraries it uses import in turn."""
    seen: set[str] = set()
    original = builtins.__import__

    def noting(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0) -> Any:
        if level == 0 and isinstance(globals, dict) and globals.get("__name__") == module_name:
            for dotted in [name, *(f"{name}.{a}" for a in fromlist or () if isinstance(a, str))]:
                parts = dotted.split(".")
                seen.update(".".join(parts[: i + 1]) for i in range(len(parts)))
        return original(name, globals, locals, fromlist, level)

    builtins.__import__ = noting
    try:
        yield seen
    finally:
        builtins.__import__ = original


def start_library_threads(device: str) -> None:
    """Start the threads torch's libraries start on first use (OpenMP's pool, BLAS's, on a GPU the
    CUDA driver's), before the solution is imported: the judge counts the process's threads from
    then on, so a thread that appears later is the solution's."""
    a = torch.randn(256, 256)
    (a @ a).sum().item()
    torch.randn(1 << 17).add_(1).sum().item()
    if device == "cuda":  # the context, no kernel: a profiled process (ncu) sees none of this
        torch.empty(1, device="cuda")
        torch.cuda.synchronize()


def running_threads(mine: set[int]) -> dict[int, str]:
    """The threads running Python code but those in `mine`, each by its name and where it runs:
    the frame its thread began in (its target: a solution's function, or a library's worker
    loop), so a thread left running is named for what it is."""
    names = {t.ident: t.name for t in threading.enumerate()}
    found = {}
    for ident, frame in sys._current_frames().items():
        if ident in mine:
            continue
        stack = [f for f, _ in traceback.walk_stack(frame)][::-1]  # outermost first; no source read
        began = next((f for f in stack if Path(f.f_code.co_filename).name != "threading.py"), stack[-1])
        where = f"{Path(began.f_code.co_filename).name}:{began.f_lineno} {began.f_code.co_name}"
        found[ident] = f"{names.get(ident, '?')} (in {where})"
    return found


def entry_point(module: Any, name: str, fmt: str, init_inputs: list[Any]) -> Any:
    """The callable each call invokes: `custom_kernel`, or for KernelBench a ModelNew built from
    the problem's init inputs after the seed Model was built after, moved to the inputs' device."""
    if fmt != "kernelbench":
        return getattr(module, name)
    cls = getattr(module, name)
    built: dict[str, Any] = {}

    def call(*inputs: Any) -> Any:
        device = next((str(t.device) for t in inputs if isinstance(t, torch.Tensor)), "cpu")
        if device not in built:
            torch.manual_seed(WEIGHT_SEED)
            model = cls(*init_inputs)
            built[device] = model.to(device) if hasattr(model, "to") else model
        with torch.no_grad():
            return built[device](*inputs)

    return call


def kind_of(value: Any) -> str:
    """What a call returned that is not tensors, in words: "None", "a dict", "a tuple of 2"."""
    if value is None:
        return "None"
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)}"
    return f"a {type(value).__name__}"


def _launch_counter() -> Any:
    try:
        from rung.backends.triton_backend import Launches
    except ImportError:
        return None
    try:
        launches = Launches()
        launches.install()
    except ImportError:
        return None
    return launches


class _Suppressed:
    """Triton launches skipped (not run) for the duration, where a counter is installed."""

    def __init__(self, launches: Any) -> None:
        self.launches = launches

    def __enter__(self) -> None:
        if self.launches is not None:
            self.launches.suppress = True

    def __exit__(self, *exc: object) -> None:
        if self.launches is not None:
            self.launches.suppress = False
