"""The plots and diagrams draw what they claim, and the widgets follow their controls."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from helpers import float_anatomy  # noqa: E402
from helpers.show.plots import plot_error_growth, plot_sum_spread, plot_tolerance_band  # noqa: E402
from helpers.show.widgets import float_explorer, precision_table, tolerance_playground  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_plot_sum_spread_centres_on_the_exact_sum():
    sums = torch.tensor([1.0, 1.0, 3.0])
    fig, ax = plot_sum_spread(sums, exact=2.0, unit=1.0, title="t")
    counts = [p.get_height() for p in ax.patches]
    assert sum(counts) == 3
    assert ax.get_xlabel() == "sum - exact, in units of 1"
    fig, ax = plot_sum_spread(sums, exact=2.0, unit=0.5, unit_name="ULPs")
    assert ax.get_xlabel() == "sum - exact, in ULPs"


def test_plot_error_growth_pairs_bounds_with_their_method():
    fig, ax = plot_error_growth([2, 4], {"sequential": [1e-8, 2e-8]}, {"sequential bound": [1e-7, 3e-7]})
    measured, bound = ax.get_lines()
    assert measured.get_color() == bound.get_color()


def test_float_explorer_shows_the_chosen_value_and_dtype():
    w = float_explorer(0.5, torch.bfloat16)
    (number, menu), view = w.children[0].children, w.children[1]
    assert number.value == 0.5 and menu.value is torch.bfloat16
    assert view.value == float_anatomy(0.5, torch.bfloat16)._repr_html_()
    menu.value = torch.float64  # the view follows the menu
    assert view.value == float_anatomy(0.5, torch.float64)._repr_html_()
    number.value = -2.0  # and the number
    assert view.value == float_anatomy(-2.0, torch.float64)._repr_html_()
    assert repr(w) == "float_explorer(value=-2.0, dtype=float64)"


def test_precision_table_reports_the_error_in_units_of_u():
    rows = dict(precision_table("tf32", 1024).rows)
    assert rows["unit roundoff u of the inputs"] == f"{2.0**-11:.3e}"
    assert 0.4 < float(rows["that error in units of u"]) < 0.8
    assert rows["largest error / largest entry below float32's rtol (1.3e-6)?"] == "False"


def test_plot_tolerance_band_draws_the_allowed_line_and_reds_the_failures():
    expected = torch.tensor([0.0, 1e-3, 1.0, 100.0], dtype=torch.float64)
    actual = expected + torch.tensor([0.0, 5e-4, 2e-3, 0.05], dtype=torch.float64)
    fig, ax = plot_tolerance_band({"run": actual}, expected, rtol=1e-3, atol=1e-3)
    line = ax.get_lines()[0]
    xs, ys = line.get_xdata(), line.get_ydata()
    assert abs(ys[0] - (1e-3 + 1e-3 * xs[0])) < 1e-12 and abs(ys[-1] - (1e-3 + 1e-3 * xs[-1])) < 1e-9
    passed, failed = ax.collections[1:]  # after the shaded band
    # 0 and 5e-4 are within atol; 2e-3 exceeds 1e-3 + 1e-3 * 1; 0.05 is within 1e-3 + 0.1
    assert len(passed.get_offsets()) == 3 and len(failed.get_offsets()) == 1
    assert tuple(failed.get_facecolor()[0][:3]) == matplotlib.colors.to_rgb("tab:red")
    assert failed.get_offsets()[0][0] == 1.0
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "run: 3 pass" in labels and "run: 1 fail" in labels


def test_tolerance_playground_counts_what_passes_and_follows_its_sliders():
    w = tolerance_playground(-5.0, -5.0, 6)
    (rtol, atol, k), view = w.children[0].children, w.children[1]
    assert "K = 64" not in view.value  # the picture is an image; the text names the counts
    assert "64 terms" not in view.value and "of 1024 correct float32 results pass" in view.value
    assert view.value.count("<img") == 1 and "data:image/png;base64," in view.value
    rtol.value, atol.value = -1.0, 0.0  # so loose that even the 0.1% bug passes
    assert "catches 0 of 1024" in view.value and "1024 of 1024 correct" in view.value
    rtol.value, atol.value = -8.0, -9.0  # so tight that most correct results fail
    passed = int(view.value.split(": ")[1].split(" of ")[0])
    assert passed < 1024 and "catches 1024 of 1024" in view.value
    k.value = 3
    assert "reduction_tolerances(torch.float32, 8," in view.value
    assert repr(w) == "tolerance_playground(log10_rtol=-8, log10_atol=-9, log2_k=3)"


def test_plot_accumulators_marks_where_each_accumulator_stalls():
    from helpers.show.plots import plot_accumulators, running_total

    assert running_total(1.0, 4096, torch.float16)[-1] == 2048
    assert running_total(1.0, 300, torch.bfloat16)[-1] == 256
    assert running_total(1.0, 4096, torch.float32)[-1] == 4096
    fig, ax = plot_accumulators(steps=4096)
    notes = [t.get_text() for t in ax.texts]
    assert notes == ["float16 stalls at 2048", "bfloat16 stalls at 256"]  # float32 does not stall by 4096


def test_plot_number_line_shows_the_gap_doubling_at_the_power_of_two():
    from helpers.show.plots import plot_number_line

    fig, ax = plot_number_line(1.0, torch.bfloat16, 4)
    ticks = sorted(float(x) for seg in ax.collections[0].get_segments() for x in {seg[0][0]})
    gaps = [b - a for a, b in zip(ticks[:-1], ticks[1:], strict=True)]
    assert gaps[:3] == [2**-8] * 3 and gaps[-3:] == [2**-7] * 3
    assert [t.get_text() for t in ax.texts][:2] == ["gap 0.00390625", "gap 0.0078125"]


def test_plot_ulp_differences_counts_the_exact_agreements():
    from helpers.show.plots import plot_ulp_differences

    a = torch.tensor([1.0, 1.0, 2.0, 4.0])
    b = torch.tensor([1.0, torch.nextafter(torch.tensor(1.0), torch.tensor(2.0)).item(), 2.0, 4.0])
    fig, ax = plot_ulp_differences(a, b, ("1 thread", "2 threads"))
    assert ax.get_title() == "3 of 4 agree bit for bit"
    heights = {round(p.get_x() + p.get_width() / 2): p.get_height() for p in ax.patches}
    assert heights == {-1: 1, 0: 3}  # a is one ULP below b once


def test_plot_speed_vs_error_draws_each_lever_and_the_budget():
    from helpers.show.plots import plot_speed_vs_error

    fig, ax = plot_speed_vs_error({"float32": (1.0, 0.0), "int8": (2.5, 1e-2)}, budget=5e-3)
    assert [t.get_text() for t in ax.texts] == ["float32", "int8"]
    assert ax.get_lines()[-1].get_ydata()[0] == 5e-3


def test_the_ring_diagram_states_the_order_the_ring_helper_adds_in():
    from helpers.lessons.distributed import ring_allreduce
    from helpers.show.diagrams import draw_ring_allreduce

    for ranks in (3, 4, 5):
        fig, ax = draw_ring_allreduce(ranks)
        expression = ax.texts[-1].get_text().split("as ")[-1]
        reversed_order_differs = False
        for seed in range(20):
            g = torch.Generator().manual_seed(seed)
            rows = torch.randn(ranks, 1, generator=g) * 10.0 ** torch.arange(ranks)[:, None]
            scope = {f"g{r}": rows[r] for r in range(ranks)}
            stated = eval(expression, {}, scope)  # float32 additions in the stated order
            assert torch.equal(stated, ring_allreduce(rows)[0]), (ranks, seed, expression)
            reversed_order_differs |= not torch.equal(sum(rows[r, 0] for r in range(ranks)), stated)
        assert reversed_order_differs  # these rows can tell one order from another


def test_the_diagrams_draw_and_label_what_they_show():
    from helpers.show import diagrams

    for draw in (diagrams.draw_reduction_orders, diagrams.draw_device_move, diagrams.draw_launch_timeline):
        fig, _ = draw()
        assert fig.axes
    fig, (loop, tree) = diagrams.draw_reduction_orders(8)
    assert "7 additions" in loop.get_title() and "3 levels" in tree.get_title()
    assert "not measured" in diagrams.draw_launch_timeline()[1].get_xlabel()


def test_plot_divergence_reds_the_modules_above_their_tolerance():
    import copy

    from helpers.diagnose import first_divergence
    from helpers.show.plots import plot_divergence

    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    broken = copy.deepcopy(model)
    with torch.no_grad():
        broken[2].weight.mul_(1.001)
    found = first_divergence(model, broken, torch.randn(8, 16, generator=torch.Generator().manual_seed(0)))
    fig, ax = plot_divergence(found)
    names = [t.get_text() for t in ax.get_yticklabels()]
    colours = [matplotlib.colors.to_hex(bar.get_facecolor()) for bar in ax.patches]
    assert found.module == "2" and names == ["0", "1", "2", "(model)"]  # in call order, the first at the top
    red = matplotlib.colors.to_hex("tab:red")
    assert [c == red for c in colours] == [False, False, True, False]  # only the changed layer fails
    assert ax.get_title() == f"first divergence: {found.module}"


def test_the_seeding_and_checkpoint_diagrams_say_what_they_draw():
    from helpers.show import diagrams

    fig, ax = diagrams.draw_worker_seeding(3)
    text = " ".join(t.get_text() for t in ax.texts)
    assert text.count("worker_init_fn(") == 3 and "base_seed + 2" in text
    fig, ax = diagrams.draw_checkpoint_flow()
    assert "weights_only=True" in " ".join(t.get_text() for t in ax.texts)
