"""Lesson 06's schematics draw what the lesson says a move and a non_blocking copy do."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

from helpers.show.transfers import draw_nonblocking_copy, draw_what_a_move_keeps  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _texts(ax) -> list[str]:
    return [t.get_text() for t in ax.texts]


def _arrows(ax) -> list[str]:
    """The colour of each arrow, as a hex string."""
    return [matplotlib.colors.to_hex(a.arrow_patch.get_edgecolor()) for a in ax.texts
            if getattr(a, "arrow_patch", None) is not None]


def test_what_a_move_keeps_draws_every_name_once_per_panel_and_says_it_is_a_schematic():
    fig, (before, after) = draw_what_a_move_keeps()
    assert "schematic" in fig._suptitle.get_text()
    for ax in (before, after):
        labels = _texts(ax)
        for name in ("model.weight", "model.running_mean", "optimizer: its params", "optimizer: its state"):
            assert labels.count(name) == 1, (name, labels)
        assert len(_arrows(ax)) == 6  # six names, each pointing at one object


def test_what_a_move_keeps_matches_what_module_to_does():
    # the right panel's claims, checked with a dtype move (the same Module._apply as a device move)
    fig, (_, after) = draw_what_a_move_keeps()
    labels = "\n".join(_texts(after))
    bn = nn.BatchNorm1d(2)
    w, rm = bn.weight, bn.running_mean
    opt = torch.optim.Adam(bn.parameters())
    bn(torch.ones(3, 2)).sum().backward()
    opt.step()
    bn.double()
    assert w is bn.weight and opt.param_groups[0]["params"][0] is bn.weight
    assert "the same Parameter" in labels
    assert rm is not bn.running_mean and rm.dtype == torch.float32
    assert "a new buffer tensor" in labels and "the old buffer tensor" in labels
    assert opt.state[bn.weight]["exp_avg"].dtype == torch.float32
    with pytest.raises(RuntimeError):
        bn(torch.ones(3, 2, dtype=torch.float64)).sum().backward()
        opt.step()
    assert "the\nnext step raises" in labels
    red = matplotlib.colors.to_hex("tab:red")
    assert _arrows(after).count(red) == 1  # only the optimizer's state is in trouble


def test_nonblocking_copy_shows_both_directions_on_two_lanes_and_is_not_data():
    fig, (top, bottom) = draw_nonblocking_copy()
    assert "not measured" in bottom.get_xlabel()
    assert top.get_title().startswith("GPU → CPU") and bottom.get_title().startswith("CPU → GPU")
    for ax in (top, bottom):
        assert [t.get_text() for t in ax.get_yticklabels()] == ["GPU", "CPU"]
    assert [len(top.collections), len(bottom.collections)] == [3, 4]  # the bars: call, wait, copy (+ kernel)
    assert any("synchronize" in t for t in _texts(top))
    assert any("may not" in t for t in _texts(top)) and any("complete" in t for t in _texts(top))
    # the read that may be wrong comes before the copy has ended, the safe one after it
    early, late = sorted(line.get_xdata()[0] for line in top.get_lines())
    bars = [c.get_paths()[0].get_extents() for c in top.collections]
    copy = next(b for b in bars if b.y0 < 0 < b.y1)  # the bar on the GPU lane
    assert early < copy.x1 <= late
