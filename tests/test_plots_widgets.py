"""The plots draw what they claim, the widget responds, and both reject bad input."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from helpers import float_anatomy  # noqa: E402
from helpers.plots import plot_error_growth, plot_sum_spread, plot_ulp  # noqa: E402
from helpers.widgets import float_explorer, precision_explorer, precision_table  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_plot_ulp_draws_the_steps_and_the_eps_line():
    fig, ax = plot_ulp(torch.float16, 1.0, 1000.0, points=100)
    steps, eps_line = ax.get_lines()
    assert len(steps.get_xdata()) == 100
    assert steps.get_ydata()[0] == torch.finfo(torch.float16).eps
    with pytest.raises(ValueError):
        plot_ulp(low=10.0, high=1.0)
    with pytest.raises(TypeError):
        plot_ulp(torch.int32)


def test_plot_sum_spread_centres_on_the_exact_sum():
    sums = torch.tensor([1.0, 1.0, 3.0])
    fig, ax = plot_sum_spread(sums, exact=2.0, unit=1.0, title="t")
    counts = [p.get_height() for p in ax.patches]
    assert sum(counts) == 3
    assert ax.get_xlabel() == "sum - exact, in units of 1"
    fig, ax = plot_sum_spread(sums, exact=2.0, unit=0.5, unit_name="ULPs")
    assert ax.get_xlabel() == "sum - exact, in ULPs"
    with pytest.raises(ValueError):
        plot_sum_spread(torch.tensor([]), 0.0, 1.0)
    with pytest.raises(ValueError):
        plot_sum_spread(sums, 0.0, 0.0)


def test_plot_error_growth_pairs_bounds_with_their_method():
    fig, ax = plot_error_growth([2, 4], {"sequential": [1e-8, 2e-8]}, {"sequential bound": [1e-7, 3e-7]})
    measured, bound = ax.get_lines()
    assert measured.get_color() == bound.get_color()
    with pytest.raises(ValueError, match="2 sizes"):
        plot_error_growth([2, 4], {"x": [1.0]})
    with pytest.raises(ValueError):
        plot_error_growth([], {})


def test_float_explorer_shows_the_chosen_value_and_dtype():
    w = float_explorer(0.5, torch.bfloat16)
    (number, menu), view = w.children[0].children, w.children[1]
    assert number.value == 0.5 and menu.value is torch.bfloat16
    assert view.value == float_anatomy(0.5, torch.bfloat16)._repr_html_()
    menu.value = torch.float64  # the view follows the menu
    assert view.value == float_anatomy(0.5, torch.float64)._repr_html_()
    number.value = -2.0  # and the number
    assert view.value == float_anatomy(-2.0, torch.float64)._repr_html_()
    assert repr(w) == "float_explorer(value=-2.0, dtype=float64)"
    with pytest.raises(TypeError):
        float_explorer(1.0, torch.int8)


def test_precision_explorer_follows_its_controls():
    w = precision_explorer("bfloat16", 6)
    (menu, slider), view = w.children[0].children, w.children[1]
    assert view.value == precision_table("bfloat16", 64)._repr_html_()
    menu.value, slider.value = "float32", 8
    assert view.value == precision_table("float32", 256)._repr_html_()
    assert repr(w) == "precision_explorer(fmt='float32', log2_k=8)"
    with pytest.raises(ValueError, match="unknown format"):
        precision_explorer("float8")


def test_precision_table_reports_the_error_in_units_of_u():
    rows = dict(precision_table("tf32", 1024).rows)
    assert rows["unit roundoff u of the inputs"] == f"{2.0**-11:.3e}"
    assert 0.4 < float(rows["that error in units of u"]) < 0.8
    assert rows["within assert_close's float32 rtol (1.3e-6)?"] == "False"
