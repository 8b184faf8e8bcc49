"""Lesson 02's figures draw what they say: the threads' ranges, split-K's blocks, the measured bars."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from helpers.show.reductions import _split, draw_split_k, draw_thread_split, plot_batch_differences  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def texts(ax):
    return [t.get_text() for t in ax.texts]


def test_split_cuts_a_range_into_contiguous_pieces_as_parallel_for_does():
    assert _split(16, 2) == [range(0, 8), range(8, 16)]
    assert _split(10, 3) == [range(0, 4), range(4, 8), range(8, 10)]  # ceil-sized, the last one shorter
    assert [i for part in _split(13, 4) for i in part] == list(range(13))


def test_thread_split_draws_every_element_twice_and_one_partial_sum_per_thread():
    fig, (left, right) = draw_thread_split(16, threads=2)
    labels = texts(left)
    assert sorted(t for t in labels if t.startswith("x")) == sorted([f"x{i}" for i in range(16)] * 2)
    assert "thread 0: partial sum p0" in labels and "thread 1: partial sum p1" in labels
    assert "p0 + p1 (the combine)" in labels
    # the 2-thread row colours elements 0..7 like thread 0 and 8..15 like thread 1
    boxes = left.patches
    assert len(boxes) == 16 * 2 + 1  # every element on both rows, and the combine box
    one_thread, two_threads = boxes[:16], boxes[16:32]
    assert len({tuple(b.get_facecolor()) for b in one_thread}) == 1
    assert [tuple(b.get_facecolor()) for b in two_threads[:8]] == [tuple(two_threads[0].get_facecolor())] * 8
    assert tuple(two_threads[8].get_facecolor()) != tuple(two_threads[7].get_facecolor())
    assert [t for t in texts(right) if t.startswith("row")] == [
        "row 0: thread 0", "row 1: thread 0", "row 2: thread 1", "row 3: thread 1"]
    assert "schematic" in fig._suptitle.get_text()


def test_thread_split_refuses_sizes_it_cannot_draw():
    with pytest.raises(ValueError, match="threads"):
        draw_thread_split(4, threads=3)
    with pytest.raises(ValueError, match="n must be"):
        draw_thread_split(64)


def test_split_k_draws_one_partial_per_block_and_their_sum():
    fig, ax = draw_split_k(16, splits=4)
    labels = texts(ax)
    partials = [f"partial {b}:\n4 products" for b in range(4)]
    total = "partial 0 + partial 1 + partial 2 + partial 3  =  C[i, j]"
    assert [t for t in labels if t.startswith("partial")] == [*partials, total]
    assert "schematic" in ax.get_title()
    with pytest.raises(ValueError, match="divides"):
        draw_split_k(16, splits=3)


def test_batch_differences_draws_one_bar_per_size_with_its_value():
    diffs = {1: 2e-4, 2: 0.0, 64: 4.9e-4}
    fig, ax = plot_batch_differences(diffs)
    assert [p.get_height() for p in ax.patches] == list(diffs.values())
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "2", "64"]
    assert ax.get_xlabel() == "rows computed alone (n)"
