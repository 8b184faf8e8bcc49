"""Interactive explorers. ipywidgets is imported inside each function so ``import helpers`` stays cheap."""

from __future__ import annotations

import torch

from helpers.floats import FORMATS, float_anatomy

__all__ = ["float_explorer"]


def float_explorer(value: float = 0.1, dtype: torch.dtype = torch.float32):
    """A text box and a dtype menu that show how a number is stored (sign, exponent, mantissa).

    Returns the ipywidgets ``interactive`` object; display it as a cell's last line.
    Introduced in lesson 01.
    """
    import ipywidgets as widgets
    from IPython.display import display

    if dtype not in FORMATS:
        raise TypeError(f"dtype {dtype} is not one of {', '.join(str(d) for d in FORMATS)}")
    options = [(str(d).replace("torch.", ""), d) for d in FORMATS]

    def show(value: float, dtype: torch.dtype) -> None:
        display(float_anatomy(value, dtype))

    return widgets.interactive(
        show,
        value=widgets.FloatText(value=value, description="value"),
        dtype=widgets.Dropdown(options=options, value=dtype, description="dtype"),
    )
