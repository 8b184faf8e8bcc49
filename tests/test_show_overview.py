"""Lesson 00's figures draw what they are given: the answers' distances, and the map of causes."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from helpers import unit_roundoff  # noqa: E402
from helpers.show.overview import DIFFERENCE_SOURCES, draw_difference_sources, plot_answer_distances  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_plot_answer_distances_draws_each_distance_and_marks_a_zero():
    distances = {"batch of 64": 2.1e-7, "batch of 1": 1.6e-7, "bfloat16": 4.1e-3, "reference": 0.0}
    fig, ax = plot_answer_distances(distances)
    assert ax.get_xscale() == "log"
    bars = ax.patches
    assert len(bars) == 3  # a zero is written, not drawn
    ends = sorted(bar.get_x() + bar.get_width() for bar in bars)
    assert ends == pytest.approx(sorted(v for v in distances.values() if v > 0))
    top_down = sorted(ax.get_yticklabels(), key=lambda t: -t.get_position()[1])
    assert [t.get_text() for t in top_down] == list(distances)  # the first answer on top
    name_at = {round(t.get_position()[1]): t.get_text() for t in top_down}
    for bar in bars:  # each bar sits on its own answer's row
        assert bar.get_x() + bar.get_width() == pytest.approx(distances[name_at[round(bar.get_y() + 0.3)]])
    texts = [t.get_text() for t in ax.texts]
    assert "0 (the same bits as the reference)" in texts and "4.1e-03" in texts
    lines = [line.get_xdata()[0] for line in ax.get_lines()]
    assert lines == [unit_roundoff("float32"), unit_roundoff("bfloat16")]


def test_plot_answer_distances_refuses_a_negative_distance():
    with pytest.raises(ValueError, match="non-negative"):
        plot_answer_distances({"a": -1.0})


def test_draw_difference_sources_names_every_cause_and_its_lessons():
    fig, ax = draw_difference_sources(seen=("precision",))
    texts = [t.get_text() for t in ax.texts]
    for cause, brings, lessons in DIFFERENCE_SOURCES:
        assert any(t.startswith(cause) for t in texts) and brings in texts and lessons in texts
    assert "precision\n(seen above)" in texts and "order of operations" in texts
    assert "(a diagram)" in ax.get_title()
    every_lesson = " ".join(lessons for _, _, lessons in DIFFERENCE_SOURCES) + " ".join(texts)
    assert all(f"{n:02d}" in every_lesson for n in range(1, 14))  # lessons 01 to 13 are on the map


def test_draw_difference_sources_refuses_an_unknown_cause():
    with pytest.raises(ValueError, match="not a cause"):
        draw_difference_sources(seen=("cosmic rays",))
