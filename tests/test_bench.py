"""helpers.lessons.bench: timings, sweeps, comparisons, rates."""

from __future__ import annotations

import math

import torch

from helpers.lessons import bench
from helpers.lessons.bench import (
    MIN_RUNS,
    Comparison,
    SweepPoint,
    Timing,
    compare,
    gb_per_s,
    gflop_per_s,
    load_note,
    noise_summary,
    page_faults_per_call,
    sweep,
    sweep_table,
    time_call,
)


def test_time_call_measures_a_sleep_of_known_length():
    import time

    t = time_call(lambda: time.sleep(0.002), min_run_time=0.05)
    assert 0.0018 < t.median < 0.05 and t.runs >= MIN_RUNS and t.spread >= 0


def test_a_slow_call_is_timed_long_enough_for_a_spread():
    import time

    # 20 ms a call, 10 ms asked for: one block, so time_call times more blocks, up to 5 in all
    start = time.perf_counter()
    t = time_call(lambda: time.sleep(0.02), min_run_time=0.01)
    assert t.runs == MIN_RUNS and not math.isinf(t.spread)
    assert time.perf_counter() - start < 0.5                         # no second blocked_autorange
    capped = time_call(lambda: time.sleep(0.02), min_run_time=0.01, max_run_time=0.01)
    assert capped.runs < MIN_RUNS and math.isinf(capped.spread)      # unknown: reads as noisy


def test_a_long_block_is_topped_up_with_shorter_ones():
    import time

    # 2 ms a call: blocked_autorange makes a block of 10 calls (20 ms), more than the 10 ms asked
    # for; the blocks added to reach MIN_RUNS are of one call each, so the whole stays short
    start = time.perf_counter()
    t = time_call(lambda: time.sleep(0.002), min_run_time=0.01)
    assert t.runs >= MIN_RUNS and 0.0018 < t.median < 0.02
    assert time.perf_counter() - start < 0.3


def test_rates_and_spreads():
    assert gflop_per_s(2e9, 0.5) == 4.0 and gb_per_s(1e9, 2.0) == 0.5
    assert SweepPoint(1, Timing(0.5, 0.0, 3), 1e9).rate == 2.0
    assert Timing(0.0, 1.0, 5).spread == math.inf
    assert Timing(1.0, 0.1, 5).spread == 0.1
    assert Timing(1.0, 0.0, 1).spread == math.inf                     # one block: IQR 0, spread unknown
    assert SweepPoint(1, Timing(1.0, 0.0, 4), 1.0).noisy


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
    assert table.headers[-2:] == ["GB/s", "note"] and len(table.rows) == 2


def test_a_noisy_size_is_timed_again_and_the_steadier_timing_kept(monkeypatch):
    given = iter([Timing(1.0, 0.5, 5), Timing(1.2, 0.1, 5), Timing(1.0, 0.05, 5),
                  Timing(1.0, 0.9, 5), Timing(2.0, 0.8, 5)])
    monkeypatch.setattr(bench, "time_call", lambda fn, min_run_time=0.1: next(given))
    points = sweep(lambda n: lambda: None, [1, 2, 3], work=lambda n: 1e9)
    assert [p.remeasured for p in points] == [True, False, True]
    assert [p.timing.median for p in points] == [1.2, 1.0, 2.0]          # the narrower of each pair
    assert [p.noisy for p in points] == [False, False, True]           # 0.8 / 2.0 = 40% is still wide
    assert noise_summary(points) == ("3 sizes, 2 timed twice (IQR over 20% of the median or under 5 blocks), "
                                    "still noisy: 3")
    assert sweep_table(points, "GB/s").rows[2][-1] == "noisy (timed twice)"
    given = iter([Timing(1.0, 0.5, 5), Timing(1.0, 0.0, 1)])
    monkeypatch.setattr(bench, "time_call", lambda fn, min_run_time=0.1: next(given))
    costly = sweep(lambda n: lambda: None, [1, 2], work=lambda n: 1e9, retime_within=-1.0)
    assert [(p.remeasured, p.noisy) for p in costly] == [(False, True), (False, True)]  # flagged only


def test_compare_interleaves_and_reports_a_ratio_with_its_range():
    order = []
    calls = {"a": lambda: order.append("a"), "b": lambda: order.append("b")}
    result = compare(calls, rounds=2, min_run_time=0.01)
    assert [len(result.timings[k]) for k in "ab"] == [2, 2]
    first_b = order.index("b")
    assert "a" in order[first_b:] and "b" in order[:order.index("a", first_b)]   # a, b, a, b: interleaved
    steady = Comparison({"slow": [Timing(3.0, 0.1, 9), Timing(4.0, 0.1, 9), Timing(5.0, 0.1, 9)],
                         "fast": [Timing(1.0, 0.1, 9), Timing(1.0, 0.1, 9), Timing(1.0, 0.1, 9)]})
    assert steady.best("slow").median == 3.0 and steady.ratios("slow", "fast") == [3.0, 4.0, 5.0]
    assert steady.ratio_text("slow", "fast") == "4.0x (3.0x to 5.0x over 3 rounds)"


def test_a_noisy_comparison_says_so():
    wide = Comparison({"slow": [Timing(3.0, 0.1, 9), Timing(4.0, 0.1, 9), Timing(9.0, 0.1, 9)],
                       "fast": [Timing(1.0, 0.1, 9)] * 3})
    assert wide.ratio_text("slow", "fast") == "4.0x (3.0x to 9.0x over 3 rounds, noisy)"   # over 2x apart
    unknown = Comparison({"slow": [Timing(3.0, 0.0, 1)] * 3, "fast": [Timing(1.0, 0.0, 9)] * 3})
    assert unknown.noisy("slow", "fast")                                # one block: spread unknown
    wide_round = Comparison({"slow": [Timing(3.0, 1.0, 9)] * 3, "fast": [Timing(1.0, 0.0, 9)] * 3})
    assert wide_round.ratio_text("slow", "fast").endswith("noisy)")     # IQR a third of the median


def test_compare_times_a_noisy_comparison_once_more_and_keeps_the_steadier(monkeypatch):
    noisy, steady = Timing(1.0, 0.5, 9), Timing(1.0, 0.01, 9)
    given = iter([noisy, steady] * 2 + [steady, steady] * 2)
    seen = []

    def fake(fn, min_run_time=0.1, threads=None):
        seen.append(threads)
        return next(given)

    monkeypatch.setattr(bench, "time_call", fake)
    result = compare({"a": lambda: None, "b": lambda: None}, rounds=2, threads={"a": 1})
    assert result.retimed and not result.noisy("a", "b") and len(seen) == 8
    assert seen[:2] == [1, None]                                        # a on one thread, b as set
    given = iter([steady] * 4)
    result = compare({"a": lambda: None, "b": lambda: None}, rounds=2)
    assert not result.retimed
    given = iter([noisy, steady] * 2)
    result = compare({"a": lambda: None, "b": lambda: None}, rounds=2, retime_within=-1.0)
    assert not result.retimed and result.noisy("a", "b")                # too slow to repeat: flagged
    assert result.ratio_text("a", "b").endswith("noisy)")


def test_load_note_is_one_line():
    note = load_note()
    assert "\n" not in note and "cores" in note


def test_page_faults_of_a_fresh_large_allocation():
    import math

    faults = page_faults_per_call(lambda: torch.empty(2**22).fill_(1.0), calls=2)   # 16 MiB, written
    assert math.isnan(faults) or faults >= 0


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


def test_slow_decode_loads_in_spawned_workers():
    # macOS and Windows start DataLoader workers by spawn: the dataset's class must be importable
    from torch.utils.data import DataLoader

    from helpers.lessons.bench import SlowDecode

    loader = DataLoader(SlowDecode(), batch_size=8, num_workers=1, multiprocessing_context="spawn")
    assert sum(batch.sum().item() for batch in loader) == 3 * 32 * 32 * sum(range(32))
