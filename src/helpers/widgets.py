"""Interactive explorers. ipywidgets is imported inside each function so ``import helpers`` stays cheap."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:  # ipywidgets is imported lazily
    import ipywidgets

from helpers.floats import FORMATS, float_anatomy

__all__ = ["float_explorer"]


def float_explorer(value: float = 0.1, dtype: torch.dtype = torch.float32) -> ipywidgets.VBox:
    """A number box and a dtype menu that show how the number is stored (sign, exponent, mantissa).

    Returns an ipywidgets ``VBox``; display it as a cell's last line. The bits are drawn in an
    ``HTML`` widget updated by callbacks (no ``Output`` widget), so the stored notebook and a
    static page show the initial state. Introduced in lesson 01.
    """
    import ipywidgets as widgets

    if dtype not in FORMATS:
        raise TypeError(f"dtype {dtype} is not one of {', '.join(str(d) for d in FORMATS)}")
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
