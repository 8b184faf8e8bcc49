"""Lesson 11's plots draw the numbers they are given: sums by world size, divide first or last."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from helpers.show.allreduce import draw_divide_first, draw_sums_by_world_size, float32_neighbours  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_float32_neighbours_enclose_the_value():
    assert float32_neighbours(3936537.875) == [3936537.5, 3936537.75, 3936538.0, 3936538.25]
    assert float32_neighbours(1.0, extra=0) == [1.0, 1.0 + 2.0**-23]  # a float32 number is the lower one
    lo, hi = float32_neighbours(0.1, extra=0)
    assert lo < 0.1 < hi and torch.tensor(lo).item() == lo and torch.tensor(hi).item() == hi


def test_the_sums_plot_puts_each_world_size_on_its_result():
    totals = {1: 3936538.0, 2: 3936538.0, 3: 3936537.75}
    fig, ax = draw_sums_by_world_size(totals, 3936537.875)
    base = 3936537.5
    dots = [line for line in ax.lines if line.get_marker() == "o"]
    assert [(d.get_xdata()[0] + base, d.get_ydata()[0]) for d in dots] == [(3936538.0, 1), (3936538.0, 2),
                                                                          (3936537.75, 3)]
    text = " ".join(t.get_text() for t in ax.texts)
    assert "3 ranks: 3936537.75" in text and "1 rank: 3936538.0" in text and "3936537.875" in text


def test_the_exact_sum_line_does_not_run_through_its_label():
    fig, ax = draw_sums_by_world_size({1: 3936538.0, 2: 3936538.0, 3: 3936537.75}, 3936537.875)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    (label,) = [t for t in ax.texts if "exact sum" in t.get_text()]
    box = label.get_window_extent(renderer)
    line_x = ax.transData.transform((3936537.875 - 3936537.5, 0))[0]
    assert not box.x0 <= line_x <= box.x1


def test_the_divide_first_plot_has_one_bar_per_world_size_grey_for_powers_of_two():
    differ = {2: 0, 3: 5460, 4: 0, 8: 0}
    fig, ax = draw_divide_first(differ, 10_000)
    bars = ax.patches[: len(differ)]
    assert [round(b.get_height(), 4) for b in bars] == [0.0, 0.546, 0.0, 0.0]
    grey = matplotlib.colors.to_rgba("0.6")
    assert [b.get_facecolor() == grey for b in bars] == [True, False, True, True]
    assert {t.get_text() for t in ax.texts} == {"0", "5460"}


def test_a_bar_of_height_zero_is_marked_on_the_baseline_in_its_colour():
    fig, ax = draw_divide_first({2: 0, 3: 5460, 4: 0}, 10_000)
    strokes = [(seg[:, 0].mean(), seg[0, 1], seg[1, 1]) for c in ax.collections for seg in c.get_segments()]
    assert sorted((round(x, 6), y0, y1) for x, y0, y1 in strokes) == [(0.0, 0.0, 0.0), (2.0, 0.0, 0.0)]
    grey = matplotlib.colors.to_rgba("0.6")
    assert all(tuple(c.get_colors()[0]) == grey for c in ax.collections)
