"""Interactive explorers. ipywidgets is imported inside each function so ``import helpers`` stays cheap."""

from __future__ import annotations

import numbers
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:  # ipywidgets is imported lazily
    import ipywidgets

from helpers._validate import check_int, describe
from helpers.floats import (
    FORMATS,
    INPUT_FORMATS,
    _check_float_dtype,
    _check_format,
    _check_positive_int,
    float_anatomy,
    matmul_error,
    unit_roundoff,
)
from helpers.tables import Table

__all__ = ["float_explorer", "precision_explorer"]

#: The largest inner dimension ``precision_table`` computes: a (64 x 2**16) @ (2**16 x 64) product
#: takes about a second; the explorer's slider stops at 2**14.
PRECISION_TABLE_MAX_K = 2**16


def float_explorer(value: float = 0.1, dtype: torch.dtype = torch.float32) -> ipywidgets.VBox:
    """A number box and a dtype menu that show how the number is stored (sign, exponent, mantissa).

    Returns an ipywidgets ``VBox``; display it as a cell's last line. The bits are drawn in an
    ``HTML`` widget updated by callbacks (no ``Output`` widget), so the stored notebook and a
    static page show the initial state. Introduced in lesson 01.

    ``value`` is a real number (an int or float, not a bool; inf and NaN are allowed, as in
    :func:`helpers.floats.float_anatomy`); ``dtype`` one of float16, bfloat16, float32, float64.
    Raises ``TypeError`` for a value or dtype of another kind, ``ValueError`` for an int too large
    for a float.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"value must be a real number (an int or a float), got {describe(value)}")
    try:
        value = float(value)
    except OverflowError:
        raise ValueError(f"value is too large for a float: {value}") from None
    dtype = _check_float_dtype(dtype)
    import ipywidgets as widgets

    number = widgets.FloatText(value=value, description="value")
    menu = widgets.Dropdown(
        options=[(str(d).replace("torch.", ""), d) for d in FORMATS], value=dtype, description="dtype"
    )
    view = widgets.HTML()

    class FloatExplorer(widgets.VBox):
        def __repr__(self) -> str:
            return f"float_explorer(value={number.value!r}, dtype={str(menu.value).replace('torch.', '')})"

    def update(_change=None) -> None:
        view.value = float_anatomy(number.value, menu.value)._repr_html_()

    number.observe(update, names="value")
    menu.observe(update, names="value")
    update()
    return FloatExplorer([widgets.HBox([number, menu]), view])


def precision_table(fmt: str, k: int) -> Table:
    """The error of a (64 x k) @ (k x 64) product with inputs rounded to ``fmt``, as a table.

    What :func:`precision_explorer` shows, with three significant digits: the library's summation
    order changes the errors by about 1e-7 relative, far below that. Introduced in lesson 03.

    ``fmt`` is one of ``INPUT_FORMATS`` and ``k`` a positive int of at most
    ``PRECISION_TABLE_MAX_K`` (2**16, under a second; the explorer's slider stops at 2**14);
    raises ``TypeError`` or ``ValueError`` otherwise, before the product is computed.
    """
    fmt = _check_format(fmt, INPUT_FORMATS)
    k = _check_positive_int(k, "k")
    if k > PRECISION_TABLE_MAX_K:
        raise ValueError(
            f"k = {k} is too large for precision_table: at most PRECISION_TABLE_MAX_K = 2**16, which "
            "it computes in about a second; call helpers.floats.matmul_error for larger products"
        )
    err = matmul_error(fmt, k)
    u = unit_roundoff(fmt)
    return Table(
        ["quantity", "value"],
        [
            ("unit roundoff u of the inputs", f"{u:.3e}"),
            ("relative error (Frobenius norm)", f"{err['rel_fro']:.2e}"),
            ("that error in units of u", f"{err['rel_fro'] / u:.2f}"),
            ("largest error / largest entry", f"{err['max_rel']:.2e}"),
            ("within assert_close's float32 rtol (1.3e-6)?", str(err["max_rel"] <= 1.3e-6)),
        ],
        title=f"inputs rounded to {fmt}, k = {k}, products summed in float32",
    )


def precision_explorer(fmt: str = "tf32", log2_k: int = 10) -> ipywidgets.VBox:
    """A format menu and a slider for the inner dimension k = 2**log2_k; shows the matmul error.

    Built like :func:`float_explorer` (an ``HTML`` widget updated by callbacks). Introduced in
    lesson 03.

    ``fmt`` is one of ``INPUT_FORMATS`` and ``log2_k`` an int from 2 to 14, the slider's range;
    raises ``TypeError`` or ``ValueError`` otherwise (the slider would silently clamp it).
    """
    fmt = _check_format(fmt, INPUT_FORMATS)
    log2_k = check_int(log2_k, "log2_k", min=2, max=14)
    import ipywidgets as widgets

    menu = widgets.Dropdown(options=list(INPUT_FORMATS), value=fmt, description="inputs")
    slider = widgets.IntSlider(value=log2_k, min=2, max=14, description="log2 k")
    view = widgets.HTML()

    class PrecisionExplorer(widgets.VBox):
        def __repr__(self) -> str:
            return f"precision_explorer(fmt={menu.value!r}, log2_k={slider.value})"

    def update(_change=None) -> None:
        view.value = precision_table(menu.value, 2**slider.value)._repr_html_()

    menu.observe(update, names="value")
    slider.observe(update, names="value")
    update()
    return PrecisionExplorer([widgets.HBox([menu, slider]), view])
