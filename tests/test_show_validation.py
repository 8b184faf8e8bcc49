"""Lesson 10's drift figure draws what it measures: weight distances from the reference run, and losses."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from helpers.show.validation import plot_drift, weight_drift  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _runs():
    ref = torch.ones(5, 4)
    same = ref.clone()
    apart = ref + torch.arange(5.0).unsqueeze(1) * 0.5  # 0, 0.5, 1, ... away in every coordinate
    return {
        "reference": (ref, [1.0, 0.9, 0.8, 0.7, 0.6], 0.9),
        "identical": (same, [1.0, 0.9, 0.8, 0.7, 0.6], 0.9),
        "apart": (apart, [1.0, 1.0, 1.0, 1.0, 1.0], 0.8),
    }


def test_weight_drift_is_the_relative_distance_from_the_reference_after_each_step():
    drift = weight_drift(_runs())
    assert list(drift) == ["identical", "apart"]
    assert torch.equal(drift["identical"], torch.zeros(5))
    # |w - w_ref| / |w_ref| with w_ref = ones(4) (norm 2) and w - w_ref = 0.5 * step in all 4 coordinates
    assert torch.allclose(drift["apart"], torch.arange(5.0) * 0.5 * 2 / 2)


def test_plot_drift_draws_one_distance_per_other_run_and_one_loss_per_run():
    fig, (left, right) = plot_drift(_runs(), smooth=2)
    assert [line.get_label() for line in left.get_lines()] == ["identical", "apart"]
    assert left.get_yscale() == "log"
    identical, apart = (line.get_ydata() for line in left.get_lines())
    assert list(identical) == [1e-12] * 5  # exactly 0, drawn at the bottom of the log axis
    assert list(apart[1:]) == pytest.approx([0.5, 1.0, 1.5, 2.0])
    assert [line.get_label() for line in right.get_lines()] == ["reference", "identical", "apart"]
    assert list(right.get_lines()[0].get_ydata()) == pytest.approx([0.95, 0.85, 0.75, 0.65])  # means of 2
    colours = [line.get_color() for line in left.get_lines()]
    assert colours == [line.get_color() for line in right.get_lines()[1:]]  # a run keeps its colour
    assert "2 steps" in right.get_ylabel() and "reference" in left.get_ylabel()


def test_plot_drift_smooths_over_all_steps_when_there_are_fewer_than_asked():
    _, (_, right) = plot_drift(_runs(), smooth=25)
    assert list(right.get_lines()[0].get_ydata()) == pytest.approx([0.8])
    assert "5 steps" in right.get_ylabel()


@pytest.mark.parametrize(
    "runs, reference, smooth",
    [
        ({}, "reference", 25),
        (_runs(), "missing", 25),
        ({"reference": (torch.ones(4), [1.0] * 4, 0.9)}, "reference", 25),
        ({**_runs(), "short": (torch.ones(3, 4), [1.0] * 3, 0.9)}, "reference", 25),
        ({**_runs(), "few losses": (torch.ones(5, 4), [1.0] * 4, 0.9)}, "reference", 25),
        (_runs(), "reference", 0),
        (_runs(), "reference", True),
    ],
)
def test_plot_drift_refuses_runs_it_cannot_compare(runs, reference, smooth):
    with pytest.raises(ValueError):
        plot_drift(runs, reference, smooth)
