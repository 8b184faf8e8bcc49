"""Lesson 04's two figures draw what they claim: float32 totals of the orders drawn, the matrix's cells."""

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from helpers.show.atomics import (  # noqa: E402
    ARRIVAL_RUNS,
    SWITCH_MATRIX,
    SWITCHES,
    THREAD_VALUES,
    Coverage,
    atomic_totals,
    draw_atomic_arrivals,
    draw_switch_matrix,
    switch_matrix_notes,
)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_atomic_totals_add_in_float32_in_the_order_of_arrival():
    runs = atomic_totals()
    assert [steps[-1] for steps in runs] == [0.0, 4.0]  # one order loses the 1s next to 2**24, one does not
    for order, steps in zip(ARRIVAL_RUNS, runs, strict=True):
        taken, slot = [0] * len(THREAD_VALUES), torch.tensor(0.0)
        for t, after in zip(order, steps, strict=True):
            slot = slot + torch.tensor(THREAD_VALUES[t][taken[t]])
            taken[t] += 1
            assert slot.dtype == torch.float32 and slot.item() == after
    assert math.fsum(v for vs in THREAD_VALUES for v in vs) == 4.0


@pytest.mark.parametrize("runs", [[(0, 0, 1, 1, 2, 2, 2)], [(0, 1, 2, 0, 2)], [(0, 1, 2, 0, 2, 3)], ["0120"]])
def test_atomic_totals_refuse_a_run_that_is_not_an_interleaving(runs):
    with pytest.raises(ValueError):
        atomic_totals(THREAD_VALUES, runs)


def test_draw_atomic_arrivals_labels_the_float32_totals_and_says_the_timing_is_a_schematic():
    fig, axes = draw_atomic_arrivals()
    assert len(axes) == len(ARRIVAL_RUNS)
    totals = atomic_totals()
    for ax, steps in zip(axes, totals, strict=True):
        assert len(ax.collections) == len(steps)  # one dot per addition
        assert f"ends at {steps[-1]:,.0f} (float32); exact sum 4" in ax.get_title(loc="left")
        texts = [t.get_text() for t in ax.texts]
        assert [f"{v:,.0f}" for v in steps] == [t for t in texts if not t.startswith(("+", "-"))]
    assert "schematic" in axes[-1].get_xlabel()
    assert "float32" in fig._suptitle.get_text()


def test_draw_switch_matrix_draws_one_cell_per_claim_with_its_verdict():
    fig, ax = draw_switch_matrix()
    cells = len(SWITCH_MATRIX) * len(SWITCHES)
    assert len(ax.patches) == cells
    labels = [t.get_text() for t in ax.texts]
    expected, note = [], 0
    for row in SWITCH_MATRIX:
        for verdict in row.verdicts:
            if verdict == "part":
                note += 1
                expected.append(f"partly ({note})")
            else:
                expected.append({"yes": "yes", "no": "–"}[verdict])
    assert labels == expected
    assert note == len(switch_matrix_notes())
    assert [t.get_text() for t in ax.get_yticklabels()] == [row.source for row in SWITCH_MATRIX]
    green = matplotlib.colors.to_rgba("#a8d8b9")
    first = SWITCH_MATRIX[0].verdicts.index("yes")
    assert ax.patches[first].get_facecolor() == green
    assert "not a measurement" in ax.get_title()


def test_every_partly_cell_has_a_note_and_every_row_a_source():
    for row in SWITCH_MATRIX:
        assert len(row.verdicts) == len(SWITCHES) and set(row.verdicts) <= {"yes", "part", "no"}
        assert row.basis, row.source
        assert sorted(c for c, _ in row.notes) == [c for c, v in enumerate(row.verdicts) if v == "part"]
    broken = Coverage("a source", ("part",) + ("no",) * (len(SWITCHES) - 1), "somewhere")
    with pytest.raises(ValueError, match="needs a note"):
        draw_switch_matrix([broken])
