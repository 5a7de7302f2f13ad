"""Proton scopes around a Triton kernel's phases, for the intra-kernel trace of the scopes rung.

A kernel that marks its own regions (`triton.profiler.language` enter_scope / exit_scope /
scope) is traced as marked. One that marks none is given scopes around its phases, found in its
source: the statements before its first top-level loop (`prologue`), each top-level loop (`loop
L<line>`, its line in the solution), statements between loops (`between L<a>-L<b>`) and after
the last loop (`epilogue`); a kernel without a loop is one `kernel` scope. A phase holding a
`return` gets no scope (an exit a warp never reaches would leave the scope open). Only kernels the
module launches (`kernel[grid](...)`, through any autotune or heuristics wrapper) are marked, not
the helpers they call. Triton's pipeliner may still move work across a loop's marks: the phases
are where the cycles go to within that.
"""

from __future__ import annotations

import ast
from typing import Any

MARKS = {"enter_scope", "exit_scope", "scope"}
PROTON = "_rung_proton"  # the name the marks call proton's language by, in the kernel's globals


def launched_kernels(module: Any, source: str) -> list[Any]:
    """The JITFunctions `source` launches as `name[grid](...)`, resolved in `module`."""
    from triton.runtime.jit import JITFunction

    names = {
        node.func.value.id
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript)
        if isinstance(node.func.value, ast.Name)
    }
    found = []
    for name in sorted(names):
        obj = getattr(module, name, None)
        while obj is not None and not isinstance(obj, JITFunction):
            obj = getattr(obj, "fn", None)  # Autotuner, Heuristics: the function they wrap
        if obj is not None and obj not in found:
            found.append(obj)
    return found


def marks_its_own(src: str) -> bool:
    return any(
        (isinstance(n, ast.Attribute) and n.attr in MARKS) or (isinstance(n, ast.Name) and n.id in MARKS)
        for n in ast.walk(ast.parse(src))
    )


def phases(body: list[ast.stmt], first_line: int) -> list[tuple[str, list[ast.stmt]]]:
    """The kernel body cut at its top-level loops, each piece named; `first_line` is the line of
    the `def` in the solution's file."""
    line = lambda st: first_line + st.lineno - 1  # noqa: E731
    loops = [i for i, st in enumerate(body) if isinstance(st, (ast.For, ast.While))]
    if not loops:
        return [("kernel", body)]
    pieces = [("prologue", body[: loops[0]])]
    for a, b in zip(loops, [*loops[1:], None], strict=True):
        pieces.append((f"loop L{line(body[a])}", [body[a]]))
        after = body[a + 1 : b]
        name = "epilogue" if b is None else f"between L{line(body[a])}-L{line(body[b])}"
        pieces.append((name, after))
    return pieces


def with_phases(src: str, first_line: int) -> tuple[str, list[str]] | None:
    """`src` (a kernel's, from `def`) with scopes around its phases, and their names; None where
    the kernel marks its own regions or no phase can be marked."""
    if marks_its_own(src):
        return None
    tree = ast.parse(src)
    fn = tree.body[0]
    assert isinstance(fn, ast.FunctionDef)
    doc = (
        fn.body[:1]
        if fn.body and isinstance(fn.body[0], ast.Expr) and isinstance(fn.body[0].value, ast.Constant)
        else []
    )
    body: list[ast.stmt] = list(doc)
    named = []
    for name, stmts in phases(fn.body[len(doc) :], first_line):
        returns = any(isinstance(n, ast.Return) for st in stmts for n in ast.walk(st))
        if stmts and not returns:
            body += [_mark("enter_scope", name), *stmts, _mark("exit_scope", name)]
            named.append(name)
        else:
            body += stmts
    if not named:
        return None
    fn.body = body
    return ast.unparse(ast.fix_missing_locations(tree)), named


def _mark(which: str, name: str) -> ast.stmt:
    call = ast.Call(ast.Attribute(ast.Name(PROTON, ast.Load()), which, ast.Load()), [ast.Constant(name)], [])
    return ast.Expr(call)


def mark_phases(module: Any, source: str) -> dict[str, Any]:
    """Scopes around the phases of every kernel `source` launches that marks none of its own;
    what was done, per kernel, for the trace's reader."""
    import triton.profiler.language as proton_language

    done: dict[str, Any] = {}
    for kernel in launched_kernels(module, source):
        marked = with_phases(kernel.src, kernel.starting_line_number)
        if marked is None:
            done[kernel.__name__] = "its own scopes" if marks_its_own(kernel.src) else "no phase to mark"
            continue
        kernel.__globals__[PROTON] = proton_language
        kernel._unsafe_update_src(marked[0])
        done[kernel.__name__] = marked[1]
    return done
