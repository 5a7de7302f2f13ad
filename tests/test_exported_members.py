"""The public surface of `rung` is what we say it is: a change to it is a decision, not an accident."""

import rung


def test_exported_members():
    assert sorted(rung.__all__) == sorted(
        [
            "SCHEMA",
            "Backend",
            "Device",
            "Problem",
            "ProblemError",
            "Run",
            "RungError",
            "RungResult",
            "Solution",
            "SolutionError",
            "Status",
            "StoreError",
            "UsageError",
            "WorkerError",
            "check",
            "history",
            "show",
        ]
    )
    for name in rung.__all__:
        assert hasattr(rung, name)


def test_spec_imports_only_the_standard_library():
    import ast
    import sys
    from pathlib import Path

    tree = ast.parse(Path(rung.spec.__file__).read_text())
    imported = {
        (n.module if isinstance(n, ast.ImportFrom) else a.name).split(".")[0]
        for n in ast.walk(tree)
        if isinstance(n, (ast.Import, ast.ImportFrom))
        for a in (n.names if isinstance(n, ast.Import) else [n])
        if not isinstance(n, ast.ImportFrom) or n.module
    }
    assert imported <= set(sys.stdlib_module_names) | {"__future__"}, imported
