"""The process boundary is the folder boundary: the controller never imports torch, triton or
solution code; the solution side imports nothing of the judge; judge/, solution/, common/ and
what they stand on import from the top of src/rung only its bottom modules (BOTTOM). Every
folder of src/rung has a rule (FOLDERS): a new folder, or a new arrow between folders, is a
decision made here."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "rung"
CONTROLLER = [
    "rung.cli",
    "rung.api",
    "rung.runner",
    "rung.optimize",
    "rung.mcp_server",
    "rung.store",
    "rung.render",
]
# The data model, the error tree, the settings, the ladder and its rung table, a problem's files
# read as data: none imports anything of rung above them (knobs reads the ladder, problem_data
# the data model; rung_table names its functions as text, imported where they run).
BOTTOM = frozenset({"spec", "errors", "knobs", "ladder", "rung_table", "problem_data"})
ANY = None  # a controller folder: any top-level module
# folder: (the top-level modules it may import, the other folders it may import)
FOLDERS: dict[str, tuple[frozenset[str] | None, frozenset[str]]] = {
    "common": (BOTTOM, frozenset()),
    "backends": (BOTTOM, frozenset({"common"})),
    "solution": (BOTTOM, frozenset({"common", "backends"})),
    "judge": (BOTTOM, frozenset({"common", "backends"})),
    "derived": (BOTTOM, frozenset({"common", "backends"})),
    "executors": (ANY, frozenset({"common", "judge"})),  # judge/gpu_facts.py counts the GPUs
    "agents": (ANY, frozenset({"backends"})),
    "report": (ANY, frozenset({"common"})),
    "cli": (ANY, frozenset({"common", "agents", "report"})),
}


def imported(path: Path, package: str) -> set[str]:
    """Every module an import in `path` names, absolute: `from rung import x` gives rung and
    rung.x, `from rung.a import b` rung.a; a relative import is resolved against `package`, the
    file's own."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            parts = package.split(".")
            base = parts[: len(parts) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            names.add(module)
            if module == "rung":  # `from rung import x`: x is a module or folder of rung's
                names.update(f"rung.{a.name}" for a in node.names)
    return names


def violations(src: Path) -> list[str]:
    """Each import under `src` (a tree laid out as src/rung) that FOLDERS does not allow, and
    each folder it has no rule for."""
    top = {p.stem for p in src.glob("*.py")}
    folders = {p.name for p in src.iterdir() if (p / "__init__.py").is_file()}
    found = [f"{name}/: a folder with no rule in FOLDERS" for name in sorted(folders - set(FOLDERS))]
    for folder in sorted(folders & set(FOLDERS)):
        tops, others = FOLDERS[folder]
        for path in sorted((src / folder).rglob("*.py")):
            package = ".".join(["rung", *path.parent.relative_to(src).parts])
            for name in sorted(imported(path, package)):
                parts = name.split(".")
                if parts[0] != "rung" or len(parts) < 2 or parts[1] == folder:
                    continue
                where = f"{path.relative_to(src)} imports {name}"
                if parts[1] in top and tops is not None and parts[1] not in tops:
                    found.append(f"{where}: not a bottom module")
                elif parts[1] in folders and parts[1] not in others:
                    found.append(f"{where}: {folder}/ may not import {parts[1]}/")
    return found


def test_every_folder_imports_only_what_its_rule_allows():
    assert violations(SRC) == []


def test_planted_imports_across_the_boundary_fail(tmp_path):
    src = tmp_path / "rung"
    for folder in ("common", "judge", "solution", "derived"):
        (src / folder).mkdir(parents=True)
        (src / folder / "__init__.py").write_text("")
    for module in ("spec", "runner", "store"):
        (src / f"{module}.py").write_text("")
    (src / "judge" / "ok.py").write_text(
        "from rung.spec import Run\nfrom rung.common import shm\nimport rung\n"
    )
    assert violations(src) == []
    (src / "judge" / "bad.py").write_text("from rung import runner\n")
    (src / "solution" / "bad.py").write_text("import torch\nfrom rung.judge import session\n")
    (src / "common" / "bad.py").write_text("from ..store import Store\n")
    (src / "derived" / "bad.py").write_text("from rung.solution.harness import call\n")
    (src / "newfolder").mkdir()
    (src / "newfolder" / "__init__.py").write_text("")
    assert violations(src) == [
        "newfolder/: a folder with no rule in FOLDERS",
        "common/bad.py imports rung.store: not a bottom module",
        "derived/bad.py imports rung.solution.harness: derived/ may not import solution/",
        "judge/bad.py imports rung.runner: not a bottom module",
        "solution/bad.py imports rung.judge: solution/ may not import judge/",
    ]


def test_the_controller_never_imports_torch_or_triton():
    code = (
        f"import sys; import {', '.join(CONTROLLER)}; "
        "bad = [m for m in ('torch', 'triton') if m in sys.modules]; print(bad); sys.exit(1 if bad else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_only_the_judge_reads_nvml():
    # NVML reads (and could set) the whole card: no business of the solution process.
    readers = [
        str(path.relative_to(SRC))
        for path in SRC.rglob("*.py")
        if any(m == "pynvml" or m.startswith("pynvml.") for m in imported(path, "rung"))
    ]
    assert readers == ["judge/gpu_facts.py"]
