"""Show a helper's code in a lesson: the one way lessons print the helpers they explain.

Introduced in lesson ``04_deterministic_algorithms``.
"""

from __future__ import annotations

import ast
import inspect
import textwrap


def source_of(obj: object, docstring: bool = False) -> str:
    """The source of a function, method or class, dedented, without its docstring unless asked."""
    text = textwrap.dedent(inspect.getsource(inspect.unwrap(obj) if callable(obj) else obj))
    if docstring:
        return text
    body = getattr(ast.parse(text).body[0], "body", [])
    first = body[0] if body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
            and isinstance(first.value.value, str):
        lines = text.splitlines()
        text = "\n".join(lines[: first.lineno - 1] + lines[first.end_lineno:]) + "\n"
    return text


def show_source(obj: object, docstring: bool = False) -> None:
    """Print :func:`source_of` ``obj``: what a lesson shows when it explains a helper."""
    print(source_of(obj, docstring), end="")
