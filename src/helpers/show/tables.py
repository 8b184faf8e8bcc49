"""Small tables that render as HTML in Jupyter and as aligned text elsewhere.

Introduced in ``00_start_here`` (the environment report) and used by every lesson that
prints a comparison.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

__all__ = ["Table", "format_value"]


def format_value(value: Any) -> str:
    """Format one cell: floats in short scientific notation, everything else with ``str``.

    Introduced in ``00_start_here``.
    """
    return _format_float(value) if isinstance(value, float) else str(value)


def _format_float(value: float) -> str:
    if value == 0.0 or value != value or value in (float("inf"), float("-inf")):
        return str(value)
    if 1e-3 <= abs(value) < 1e6:
        return f"{value:.6g}"
    return f"{value:.3e}"


class Table:
    """A titled table of rows, shown as HTML in Jupyter and as plain text by ``print``.

    ``headers`` are strings and each row holds one cell (of any kind, see :func:`format_value`)
    per header. Introduced in ``00_start_here``.
    """

    def __init__(self, headers: Sequence[str], rows: Sequence[Sequence[Any]], title: str = "") -> None:
        self.headers = list(headers)
        self.rows = [list(row) for row in rows]
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
