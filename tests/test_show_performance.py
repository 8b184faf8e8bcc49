"""helpers.show.performance: lesson 08's throughput and roofline figures with datasheet references."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from helpers.lessons.bench import SweepPoint, Timing  # noqa: E402
from helpers.show.performance import (  # noqa: E402
    DATASHEET_PEAKS,
    plot_roofline_with_datasheets,
    plot_throughput,
)


def points(sizes, spread=0.0):
    return [SweepPoint(n, Timing(1e-3, spread * 1e-3, 5), 1e6 * n) for n in sizes]


def labels(ax):
    return [t.get_text() for t in ax.get_legend().get_texts()]


def test_the_datasheet_numbers_and_their_sources():
    t4, h100 = DATASHEET_PEAKS
    assert (t4.name, t4.fp32_gflops, t4.bandwidth_gbps) == ("NVIDIA T4", 8100.0, 300.0)
    assert (h100.name, h100.fp32_gflops, h100.bandwidth_gbps) == ("NVIDIA H100 SXM", 67000.0, 3350.0)
    assert all(d.source.startswith("https://www.nvidia.com/") for d in DATASHEET_PEAKS)
    assert t4.ridge == pytest.approx(27.0) and h100.ridge == pytest.approx(20.0)


def test_without_a_live_gpu_the_datasheet_peaks_are_drawn_and_labelled_as_not_measured():
    cpu = {"matmul": points([16, 64]), "add": points([1024, 4096], spread=0.5)}
    fig, (left, right) = plot_throughput(cpu)
    for ax in (left, right):
        assert sum("datasheet peak, not measured" in t for t in labels(ax)) == 2
    assert [line.get_ydata()[0] for line in left.get_lines()[-2:]] == [8100.0, 67000.0]
    assert [line.get_ydata()[0] for line in right.get_lines()[-2:]] == [300.0, 3350.0]
    assert "still noisy after a second timing" in labels(right)
    assert "still noisy" not in " ".join(labels(left))
    assert "not measurements" in fig._suptitle.get_text()
    plt.close(fig)


def test_with_a_live_gpu_its_curves_replace_the_datasheet_lines():
    cpu = {"matmul": points([16, 64]), "add": points([1024, 4096])}
    live = {"matmul": points([16, 4096]), "add": points([1024, 2**24])}
    fig, (left, right) = plot_throughput(cpu, live, live_name="NVIDIA H200")
    assert labels(left) == ["this CPU (live)", "NVIDIA H200 (live)"] == labels(right)
    assert "NVIDIA H200 measured here" in fig._suptitle.get_text()
    plt.close(fig)


def test_roofline_draws_the_measured_roof_and_each_datasheet_roof():
    fig, ax = plot_roofline_with_datasheets({"op": (0.1, 1.0)}, peak_gflops=100.0, peak_gbps=10.0)
    roofs = {line.get_label(): line.get_ydata() for line in ax.get_lines()}
    assert max(roofs["this CPU: measured roof"]) == pytest.approx(100.0)
    assert max(roofs["NVIDIA T4: datasheet roof, not measured"]) == pytest.approx(8100.0)
    assert max(roofs["NVIDIA H100 SXM: datasheet roof, not measured"]) == pytest.approx(67000.0)
    xs, ys = next(line for line in ax.get_lines() if line.get_label().startswith("NVIDIA T4")).get_data()
    assert ys[0] == pytest.approx(xs[0] * 300.0, rel=1e-5)          # memory-bound at the left
    plt.close(fig)
