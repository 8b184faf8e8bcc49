"""Small tables that render as HTML in Jupyter and as aligned text elsewhere.

Introduced in ``00_start_here`` (the environment report) and used by every lesson that
prints a comparison.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

from helpers._validate import check_sequence, check_str, describe

__all__ = ["Table", "format_value"]


def format_value(value: Any) -> str:
    """Format one cell: floats in short scientific notation, everything else with ``str``.

    ``value`` may be anything: a table cell holds whatever a lesson puts there. An object whose
    ``str`` fails is shown by its ``repr``, or failing that by its type, so a table never fails to
    render; a float subclass whose comparisons or formatting fail is formatted as the plain float
    it holds. Introduced in ``00_start_here``.
    """
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, float):
        try:
            return _format_float(value)
        except Exception:  # a float subclass whose __eq__, __abs__ or __format__ fails
            return _format_float(float.__float__(value))
    try:
        text = str(value)
    except Exception:
        try:
            text = repr(value)
        except Exception:
            return f"<{type(value).__name__}>"
    return text if isinstance(text, str) else f"<{type(value).__name__}>"


def _format_float(value: float) -> str:
    if value == 0.0 or value != value or value in (float("inf"), float("-inf")):
        return str(value)
    if 1e-3 <= abs(value) < 1e6:
        return f"{value:.6g}"
    return f"{value:.3e}"


def _list_or_tuple(value: object, name: str) -> list | tuple:
    """A list or tuple (not a string, a bytearray, a range or any other sequence)."""
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"{name} must be a list or tuple, got {describe(value)}")
    return value


class Table:
    """A titled table of rows, shown as HTML in Jupyter and as plain text by ``print``.

    ``headers`` is a non-empty list or tuple of strings, ``rows`` a list or tuple of rows, each a
    list or tuple with one cell (of any kind, see :func:`format_value`) per header, and ``title``
    a string. Raises ``TypeError`` for arguments of the wrong kind and ``ValueError`` for no
    headers or a row of the wrong length, naming it (``rows[2]``). Introduced in ``00_start_here``.
    """

    def __init__(self, headers: Sequence[str], rows: Sequence[Sequence[Any]], title: str = "") -> None:
        headers = check_sequence(_list_or_tuple(headers, "headers"), "headers", item_check=check_str)
        if not headers:
            raise ValueError("headers is empty: a Table needs at least one column header")
        rows = check_sequence(_list_or_tuple(rows, "rows"), "rows", item_check=_list_or_tuple)
        rows = [list(row) for row in rows]
        for i, row in enumerate(rows):
            if len(row) != len(headers):
                raise ValueError(
                    f"rows[{i}] has {len(row)} cell{'' if len(row) == 1 else 's'} but there "
                    f"{'is 1 header' if len(headers) == 1 else f'are {len(headers)} headers'} "
                    f"(row {i} needs one cell per column)"
                )
        title = check_str(title, "title")
        self.headers = headers
        self.rows = rows
        self.title = title

    def cells(self) -> list[list[str]]:
        """Every row as formatted strings."""
        return [[format_value(v) for v in row] for row in self.rows]

    def __str__(self) -> str:
        cells = self.cells()
        widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(self.headers)]
        line = lambda parts: "  ".join(p.ljust(w) for p, w in zip(parts, widths, strict=True)).rstrip()
        out = [self.title] if self.title else []
        out += [line(self.headers), line(["-" * w for w in widths])]
        out += [line(r) for r in cells]
        return "\n".join(out)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        esc = html.escape
        head = "".join(f"<th style='text-align:left'>{esc(h)}</th>" for h in self.headers)
        body = "".join(
            "<tr>" + "".join(f"<td style='text-align:left'>{esc(c)}</td>" for c in row) + "</tr>"
            for row in self.cells()
        )
        caption = f"<caption style='text-align:left'><b>{esc(self.title)}</b></caption>" if self.title else ""
        return f"<table>{caption}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def source_of(function: Any) -> str:
    """The source of a function or class without its docstring, for a lesson to show what a
    helper does (d2l's habit of defining helpers in the text). Introduced in lesson 04.

    Raises ``TypeError`` for an object whose source Python cannot find (a builtin, a lambda
    typed at a prompt, an instance).
    """
    import ast
    import inspect
    import textwrap

    function = inspect.unwrap(function) if callable(function) else function
    try:
        text = textwrap.dedent(inspect.getsource(function))
    except (TypeError, OSError) as err:
        raise TypeError(f"function must be a function or class with source code, not {describe(function)}") from err
    node = ast.parse(text).body[0]
    body = getattr(node, "body", [])
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
            and isinstance(body[0].value.value, str):
        lines = text.splitlines()
        first, last = body[0].lineno - 1, body[0].end_lineno
        text = "\n".join(lines[:first] + lines[last:]) + "\n"
    return text
