"""Lesson 13's figures draw what they are given, and mark published data as such."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from helpers.show.myths import PUBLISHED_INVERSE, VERDICT_COLORS, draw_verdict_board, plot_small_work  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_small_work_draws_each_measured_round_and_the_published_bars():
    ratios = [40.0, 55.0, 47.0, 61.0, 50.0]
    fig, (left, right) = plot_small_work(ratios)
    assert list(left.lines[0].get_ydata()) == ratios
    heights = sorted(round(p.get_height(), 5) for p in right.patches)
    assert heights == sorted(v for _, g, c in PUBLISHED_INVERSE for v in (g, c))
    assert "published, not measured here" in right.get_title()
    assert "42265" in " ".join(t.get_text() for t in fig.texts)


def test_verdict_board_has_one_coloured_row_per_claim():
    verdicts = [("A claim", "true", "because (lesson 01)"), ("B claim", "false", "no (lessons 02, 06)"),
                ("C claim", "it depends", "see (lesson 07)")]
    fig, ax = draw_verdict_board(verdicts)
    colours = [matplotlib.colors.to_hex(p.get_facecolor()) for p in ax.patches]
    assert colours == [VERDICT_COLORS[v] for _, v, _ in verdicts]
    text = [t.get_text() for t in ax.texts]
    assert "13.2  B claim" in text and "it depends" in text
    assert "lessons 02, 06" in text and "lesson 01" in text  # plural only where several are named
    assert "schematic" in ax.get_title()
