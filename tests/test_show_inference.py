"""helpers.show.inference: lesson 09's figures draw what they are given."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

from helpers.show.inference import plot_latency_throughput, plot_thread_speedups  # noqa: E402


def test_thread_speedups_draw_the_median_and_the_ideal():
    fig, ax = plot_thread_speedups({1: [1.0, 1.0, 1.0], 2: [1.5, 1.9, 1.7], 4: [1.2, 1.6, 2.0]}, cpus=2)
    measured = ax.containers[0].lines[0]                      # the errorbar's data line
    ideal = next(line for line in ax.lines if line.get_label() == "ideal")
    assert list(measured.get_ydata()) == [1.0, 1.7, 1.6]
    assert list(ideal.get_ydata()) == [1, 2, 4]
    assert any("3 rounds" in t.get_text() for t in ax.get_legend().get_texts())
    plt.close(fig)


def test_latency_throughput_has_two_axes_of_the_right_values():
    fig, left = plot_latency_throughput({64: 0.01, 1: 0.001})
    assert list(left.lines[0].get_xdata()) == [1, 64]
    assert list(left.lines[0].get_ydata()) == [1.0, 10.0]
    right = [ax for ax in fig.axes if ax is not left][0]
    assert list(right.lines[0].get_ydata()) == [1000.0, 6400.0]
    plt.close(fig)
