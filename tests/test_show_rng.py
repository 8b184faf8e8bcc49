"""Lesson 05's diagrams draw what they claim: what a seed reaches, and when a DataLoader draws."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from helpers.show.rng import SEED_TARGETS, draw_epoch_timeline, draw_seed_reach  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _texts(ax) -> str:
    return " ".join(t.get_text() for t in ax.texts)


def test_the_seed_diagram_arrows_exactly_the_generators_manual_seed_reaches():
    fig, ax = draw_seed_reach()
    arrows = [t for t in ax.texts if getattr(t, "arrow_patch", None) is not None]
    assert len(arrows) == sum(reached for _, reached, _ in SEED_TARGETS) == 2
    text = _texts(ax)
    for name, reached, other in SEED_TARGETS:
        assert name in text and (reached or other in text), name
    assert "diagram" in ax.get_title()


def test_the_seed_diagram_matches_what_manual_seed_does():
    import random

    import numpy as np

    reached = {name.split("\n")[0]: r for name, r, _ in SEED_TARGETS}
    random.seed(1)
    np.random.seed(1)
    mine = torch.Generator().manual_seed(1)
    draws = []
    for _ in range(2):
        torch.manual_seed(3)  # resets only the first of these four streams
        draws.append((torch.rand(1).item(), random.random(), np.random.rand(),
                      torch.rand(1, generator=mine).item()))
    repeated = [a == b for a, b in zip(*draws, strict=True)]
    assert repeated == [True, False, False, False]
    assert reached["PyTorch's CPU generator"] and not reached["Python's random"]
    assert not reached["NumPy's global generator"]
    assert not reached["generators you create: torch.Generator(),"]


def test_the_timeline_draws_every_batch_and_the_checkpoint_where_asked():
    batches, stop_epoch, done = 6, 1, 4
    fig, ax = draw_epoch_timeline(batches, stop_epoch, done)
    boxes = [p for p in ax.patches if p.get_gid() == "batch"]
    epochs = stop_epoch + 2
    assert len(boxes) == epochs * batches + 2 * (epochs - stop_epoch) * batches
    skipped = [p for p in boxes if p.get_hatch() == "//"]
    assert len(skipped) == 2 * done  # both resumed runs load the done batches again
    (line,) = [x for x in ax.lines if x.get_gid() == "checkpoint"]
    first_after = min(p.get_x() for p in boxes if p.get_hatch() is None and p.get_x() > line.get_xdata()[0])
    last_skipped = max(p.get_x() for p in skipped)
    assert last_skipped < line.get_xdata()[0] < first_after
    text = _texts(ax)
    assert f"epoch {stop_epoch + 1}, after {done} batches" in text and f"save S{stop_epoch}" in text
    assert all(f"S{e}" in text for e in range(epochs))
    assert "schematic" in ax.get_title() and "not measured" in ax.get_xlabel()


def test_the_timeline_refuses_what_it_cannot_draw():
    with pytest.raises(ValueError, match="done in 1..batches-1"):
        draw_epoch_timeline(6, 1, 6)


def test_the_timeline_marks_the_spare_permutation_at_each_epochs_end():
    batches, stop_epoch, done = 6, 1, 4
    fig, ax = draw_epoch_timeline(batches, stop_epoch, done)
    epochs = stop_epoch + 2
    marks = {gid: [x for x in ax.lines if x.get_gid() == gid] for gid in ("base_seed", "order", "spare")}
    rows = epochs + 2 * (epochs - stop_epoch)        # the run that never stops, and two resumed runs
    assert [len(m) for m in marks.values()] == [rows, rows, rows]
    boxes = [p for p in ax.patches if p.get_gid() == "batch"]
    for spare in marks["spare"]:
        x, y = spare.get_xdata()[0], spare.get_ydata()[0]
        row = sorted(p.get_x() for p in boxes if abs(p.get_y() - (y - 0.85)) < 1e-9)  # its row's batches
        ended = [left for left in row if left < x]
        assert ended and len(ended) % batches == 0 and ended[-1] + 0.9 < x   # after an epoch's last batch
        seeds = [m.get_xdata()[0] for m in marks["base_seed"] if m.get_ydata()[0] == y]
        following = [left for left in row if left > x]
        assert not following or any(x < seed < following[0] for seed in seeds)  # before the next epoch's
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any("spare permutation as it runs out" in t and "earlier with workers" in t for t in labels)
