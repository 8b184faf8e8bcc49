"""Interactive explorers. ipywidgets is imported inside each function so ``import helpers`` stays cheap."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:  # ipywidgets is imported lazily
    import ipywidgets

from helpers.floats import FORMATS, float_anatomy, matmul_error, unit_roundoff
from helpers.show.tables import Table

__all__ = ["checklist_html", "float_explorer", "precision_table", "tolerance_playground"]

def float_explorer(value: float = 0.1, dtype: torch.dtype = torch.float32) -> ipywidgets.VBox:
    """A number box and a dtype menu that show how the number is stored (sign, exponent, mantissa).

    Returns an ipywidgets ``VBox``; display it as a cell's last line. The bits are drawn in an
    ``HTML`` widget updated by callbacks (no ``Output`` widget), so the stored notebook and a
    static page show the initial state. Introduced in lesson 01.
    """
    import ipywidgets as widgets

    number = widgets.FloatText(value=float(value), description="value")
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

    Shown with three significant digits: the library's summation order changes the errors by about
    1e-7 relative, far below that. ``fmt`` is one of ``helpers.floats.INPUT_FORMATS``.
    Introduced in lesson 03.
    """
    err = matmul_error(fmt, k)
    u = unit_roundoff(fmt)
    return Table(
        ["quantity", "value"],
        [
            ("unit roundoff u of the inputs", f"{u:.3e}"),
            ("relative error (Frobenius norm)", f"{err['rel_fro']:.2e}"),
            ("that error in units of u", f"{err['rel_fro'] / u:.2f}"),
            ("largest error / largest entry", f"{err['max_rel']:.2e}"),
            ("largest error / largest entry below float32's rtol (1.3e-6)?", str(err["max_rel"] <= 1.3e-6)),
        ],
        title=f"inputs rounded to {fmt}, k = {k}, products summed in float32",
    )


def _figure_html(fig) -> str:
    """A matplotlib figure as an inline PNG ``<img>``, then closed: an HTML widget keeps it in its state."""
    import base64
    import io

    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=80)
    plt.close(fig)
    encoded = base64.b64encode(buffer.getvalue()).decode("ascii")
    return f'<img alt="tolerance band" src="data:image/png;base64,{encoded}"/>'


def tolerance_playground(
    log10_rtol: float = -5.0, log10_atol: float = -5.0, log2_k: int = 10
) -> ipywidgets.VBox:
    """Sliders for rtol, atol and the length K of each sum; shows which results a check passes.

    The results are the 64 x 16 entries of a float32 matrix product ``a @ b`` with inner dimension
    ``K = 2**log2_k`` (``torch.randn`` inputs, seed 0), each one a K-term sum, compared with the
    same product in float64; a second series is those results with a 0.1% error, a bug a check
    should catch. The picture is :func:`helpers.show.plots.plot_tolerance_band`; the text counts
    what passes and gives ``reduction_tolerances``'s suggestion for this K. The sliders span
    ``log10_rtol`` -8 to -1, ``log10_atol`` -9 to 0 and ``log2_k`` 2 to 14. Introduced in lesson 10.
    """
    import ipywidgets as widgets

    from helpers.compare import reduction_tolerances
    from helpers.show.plots import plot_tolerance_band

    rtol_slider = widgets.FloatSlider(
        value=log10_rtol, min=-8.0, max=-1.0, step=0.1, description="log10 rtol"
    )
    atol_slider = widgets.FloatSlider(value=log10_atol, min=-9.0, max=0.0, step=0.1, description="log10 atol")
    k_slider = widgets.IntSlider(value=log2_k, min=2, max=14, description="log2 K")
    view = widgets.HTML()
    products: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    class TolerancePlayground(widgets.VBox):
        def __repr__(self) -> str:
            return (
                f"tolerance_playground(log10_rtol={rtol_slider.value:g}, "
                f"log10_atol={atol_slider.value:g}, log2_k={k_slider.value})"
            )

    def product(k: int) -> tuple[torch.Tensor, torch.Tensor]:
        if k not in products:
            g = torch.Generator().manual_seed(0)
            a, b = torch.randn(64, k, generator=g), torch.randn(k, 16, generator=g)
            products[k] = (a @ b, a.double() @ b.double())
        return products[k]

    def update(_change=None) -> None:
        k = 2**k_slider.value
        rtol, atol = 10.0**rtol_slider.value, 10.0**atol_slider.value
        actual, expected = product(k)
        bug = actual * 1.001
        allowed = atol + rtol * expected.abs()
        passed = int(((actual.double() - expected).abs() <= allowed).sum())
        caught = int(((bug.double() - expected).abs() > allowed).sum())
        suggested = reduction_tolerances(torch.float32, k, scale=float(expected.abs().mean()))
        fig, _ = plot_tolerance_band(
            {"float32 a @ b": actual, "with a 0.1% bug": bug},
            expected,
            rtol,
            atol,
            title=f"K = {k} terms per sum",
        )
        view.value = (
            f"<p>rtol = {rtol:.2g}, atol = {atol:.2g}: {passed} of {actual.numel()} correct float32 results "
            f"pass, and the check catches {caught} of {bug.numel()} results with a 0.1% error. "
            f"reduction_tolerances(torch.float32, {k}, scale=mean |expected|) suggests "
            f"rtol = {suggested[0]:.2g}, atol = {suggested[1]:.2g}.</p>" + _figure_html(fig)
        )

    for control in (rtol_slider, atol_slider, k_slider):
        control.observe(update, names="value")
    update()
    return TolerancePlayground([widgets.HBox([rtol_slider, atol_slider, k_slider]), view])


def checklist_html(outcome, reasons: list[str]) -> str:
    """The report of ``helpers.lessons.checklist.reproducibility_checklist``.

    The settings used, the outcome, and what is left open.
    """
    import html

    from helpers.lessons.checklist import SETTINGS

    used = [
        f"<li><code>{html.escape(SETTINGS[name])}</code></li>" for name, on in outcome.settings.items() if on
    ]
    parts = [f"<p><b>{html.escape(str(outcome))}</b></p>"]
    if outcome.match and reasons:
        parts.append(
            "<p>They matched this time, but nothing promises it: something below is still left open.</p>"
        )
    parts.append("<p>Settings used:</p><ul>" + ("".join(used) or "<li>none</li>") + "</ul>")
    if reasons:
        items = "".join(f"<li>{html.escape(r)}</li>" for r in reasons)
        parts.append(f"<p>What can still differ between the runs:</p><ul>{items}</ul>")
    else:
        parts.append(
            "<p>Nothing is left to chance: every source of difference in this training is controlled, "
            "on this machine and this software.</p>"
        )
    if outcome.settings["workers"]:
        parts.append(
            "<p>With workers, PyTorch seeds random, NumPy and torch in each worker from the loader's base "
            "seed, so the main process's NumPy and Python seeds do not reach the data, and "
            "<code>worker_init_fn=seed_worker</code> adds nothing here; it matters for a generator the "
            "dataset keeps itself (lesson 05, DataLoader workers).</p>"
        )
    return "".join(parts)
