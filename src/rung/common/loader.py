"""Importing a Python file by path, as a module of a given name (a solution, a problem)."""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path


class NotImportable(ImportError):
    """The file cannot be imported at all (no loader for it)."""


def import_file(path: Path, module_name: str) -> types.ModuleType:
    """Import a Python file as `module_name`, its folder first on sys.path (for sibling imports)."""
    folder = str(path.parent.resolve())
    if folder not in sys.path:
        sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise NotImportable(f"{path}: cannot be imported")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module
