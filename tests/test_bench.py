"""helpers.lessons.bench and the performance plots: timings, sweeps, rates."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from helpers.lessons.bench import SweepPoint, Timing, gb_per_s, gflop_per_s, sweep, sweep_table, time_call  # noqa: E402
from helpers.show.plots import plot_roofline, plot_sweeps  # noqa: E402


def test_time_call_measures_a_sleep_of_known_length():
    import time

    t = time_call(lambda: time.sleep(0.002), min_run_time=0.05)
    assert 0.0018 < t.median < 0.05 and t.runs >= 1 and t.spread >= 0


def test_rates():
    assert gflop_per_s(2e9, 0.5) == 4.0 and gb_per_s(1e9, 2.0) == 0.5
    assert SweepPoint(1, Timing(0.5, 0.0, 3), 1e9).rate == 2.0
    assert Timing(0.0, 1.0, 1).spread == float("inf")


def test_sweep_times_every_size_and_warms_up_first():
    calls = []

    def make(n):
        x = torch.ones(n)
        calls.append(n)
        return lambda: x.sum()

    points = sweep(make, [10, 1000], work=lambda n: 4 * n, min_run_time=0.01)
    assert [p.size for p in points] == [10, 1000] and calls == [10, 1000]
    assert all(p.timing.median > 0 and p.work == 4 * p.size for p in points)
    table = sweep_table(points, "GB/s", title="t")
    assert table.headers[-1] == "GB/s" and len(table.rows) == 2


def test_sweep_plots_draw_one_line_per_series():
    fig, ax = plot_sweeps({"CPU": ([1, 2], [3, 4]), "GPU": ([1, 2], [5, 6])}, "n", "GFLOP/s")
    assert [list(line.get_ydata()) for line in ax.get_lines()] == [[3, 4], [5, 6]]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["CPU", "GPU"]
    plt.close(fig)


def test_roofline_ceilings_meet_at_the_ridge():
    fig, ax = plot_roofline({"op": (0.1, 1.0)}, peak_gflops=100.0, peak_gbps=10.0)
    xs, ys = ax.get_lines()[0].get_data()
    assert max(ys) == pytest.approx(100.0) and ys[0] == pytest.approx(xs[0] * 10.0, rel=1e-5)
    plt.close(fig)


def test_progress_line_comes_and_goes_without_leaving_output():
    # In a kernel: the first display is empty (what nbval compares), the updates carry the line,
    # and the last update empties it again (what Jupyter saves).
    from jupyter_client.manager import start_new_kernel

    code = (
        "from helpers.lessons.bench import sweep\n"
        "sweep(lambda n: lambda: None, [1, 2], work=lambda n: 1.0, min_run_time=0.01, progress_after=60.0)\n"
        "sweep(lambda n: lambda: None, [1, 2], work=lambda n: 1.0, min_run_time=0.01, progress_after=0.0)\n"
    )
    manager, client = start_new_kernel(kernel_name="python3")
    try:
        msg_id = client.execute(code)
        shown = []
        while True:
            msg = client.get_iopub_msg(timeout=60)
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind = msg["msg_type"]
            assert kind != "error", msg["content"]
            if kind in ("display_data", "update_display_data"):
                shown.append((kind, msg["content"]["data"]))
            if kind == "status" and msg["content"]["execution_state"] == "idle":
                break
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    assert shown[0] == ("display_data", {})  # only the second sweep shows progress
    assert ("update_display_data", {"text/plain": "sweep: 1/2 sizes done (last: 1)"}) in shown
    assert shown[-1] == ("update_display_data", {})


def test_progress_prints_nothing_outside_ipython(capsys):
    sweep(lambda n: lambda: None, [1, 2], work=lambda n: 1.0, min_run_time=0.01, progress_after=0.0)
    assert capsys.readouterr().out == ""
