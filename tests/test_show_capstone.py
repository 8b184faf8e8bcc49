"""Lesson 12's figures: plain-word verdicts (first divergence, inherited), the stage grid, the symptom."""

import copy

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from helpers.diagnose import Divergence, first_divergence  # noqa: E402
from helpers.show.capstone import LEGEND, VERDICTS, plot_predictions, plot_stages, verdicts  # noqa: E402
from helpers.show.tables import Table  # noqa: E402

HEADERS = ["module", "type", "output shape", "K", "max rel error", "max ULP", "tolerance", "verdict"]


def divergence(module, rows):
    """A Divergence with rows (name, error, verdict) filled out as first_divergence fills them."""
    table = Table(HEADERS, [(name, "Linear", "(4, 2)", 1, e, 0, 1e-6, v) for name, e, v in rows])
    return Divergence(module, table)


SHIPPED = divergence("a", [("a", 0.5, "FAIL"), ("b", 2.0, "inherited"), ("c", 0.1, "inherited"),
                            ("(model)", 0.1, "inherited")])
CLEAN = divergence(None, [("a", 0.0, "pass"), ("b", 1e-3, "pass"), ("c", 0.0, "pass"),
                          ("(model)", 1e-3, "pass")])


def test_rows_after_the_first_divergence_read_as_first_divergence_marked_them():
    assert verdicts(SHIPPED) == ["first divergence", "inherited", "inherited", "inherited"]
    middle = divergence("b", [("a", 0.0, "pass"), ("b", 0.3, "FAIL"), ("c", 0.2, "inherited")])
    assert verdicts(middle) == ["same bits", "first divergence", "inherited"]
    branches = divergence("a", [("a", 0.3, "FAIL"), ("b", 0.0, "pass"), ("c", 0.2, "FAIL")])
    assert verdicts(branches) == ["first divergence", "same bits", "diverges too"]


def test_rows_that_pass_are_same_bits_or_within_tolerance():
    assert verdicts(CLEAN) == ["same bits", "within tolerance", "same bits", "within tolerance"]
    assert all(kind in LEGEND for kind in VERDICTS)


class TwoLayers(torch.nn.Module):
    """Two Linear layers with a shift between them in the model's own code, outside any module."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = torch.nn.Linear(4, 4), torch.nn.Linear(4, 2)
        self.shift = 0.0

    def forward(self, x):
        return self.b(self.a(x) + self.shift)


@pytest.mark.parametrize("seed", [0, 30])  # with seed 30, b itself fails first: its parent is blamed
def test_a_divergence_in_a_models_own_code_marks_the_call_named_before(seed):
    torch.manual_seed(seed)
    model = TwoLayers()
    shifted = copy.deepcopy(model)
    shifted.shift = 1.0
    found = first_divergence(model, shifted, torch.ones(3, 4))
    assert found.module == "(model) (its own code, before b)"
    assert [row[7] for row in found.table.rows] == ["pass", "FAIL (its input)", "inherited"]
    assert verdicts(found) == ["same bits", "first divergence", "inherited"]


def test_an_own_code_verdict_without_a_call_marks_the_containers_row():
    own = divergence("(model) (its own code)",
                     [("a", 0.0, "pass"), ("b", 0.0, "pass"), ("(model)", 0.4, "FAIL (own code)")])
    assert verdicts(own) == ["same bits", "same bits", "first divergence"]
    named = divergence("(model) (its own code, before b)",
                       [("a", 0.0, "pass"), ("b", 1.3, "FAIL (its input)"), ("(model)", 1.3, "inherited")])
    assert verdicts(named) == ["same bits", "first divergence", "inherited"]


def test_stage_grid_has_a_cell_per_module_and_stage_coloured_by_verdict():
    fig, ax = plot_stages({"as shipped": SHIPPED, "fixed": CLEAN}, "title")
    assert len(ax.patches) == 8
    colours = {tuple(p.get_facecolor()) for p in ax.patches}
    assert {tuple(matplotlib.colors.to_rgba(VERDICTS[k])) for k in VERDICTS if k != "diverges too"} == colours
    assert [t.get_text() for t in ax.get_yticklabels()] == ["as shipped", "fixed"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b", "c", "(model)"]
    assert "0.5" in [t.get_text() for t in ax.texts] and ax.get_title() == "title"
    caption = " ".join(t.get_text() for t in fig.texts).replace("\n", " ")
    assert "within tolerance: the module's own rounding plus at most twice the error it received" in caption
    plt.close(fig)


def test_symptom_plot_shows_every_run_and_the_differences_from_the_reference():
    runs = {"A": {"predictions": [0.0, 1.0]}, "A again": {"predictions": [0.0, 1.001]},
            "B": {"predictions": [0.5, 0.9]}}
    fig, (left, right) = plot_predictions(runs)
    assert [t.get_text() for t in left.get_legend().get_texts()] == ["A", "A again", "B"]
    assert len(right.lines) == 2 and right.get_yscale() == "log"
    floor = right.lines[0].get_ydata()[0]                       # a difference of 0, drawn at the floor
    assert 0 < floor < 1e-3
    assert right.get_ylim()[1] >= 30 * 0.5                      # headroom for the legend above the points
    plt.close(fig)
