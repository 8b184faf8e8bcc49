"""Lesson 13's verdict recorder checks its evidence, and its figures mark published data as such."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from helpers.show.myths import (  # noqa: E402
    PUBLISHED_GPU_VS_CPU,
    VERDICT_COLORS,
    Verdicts,
    draw_verdict_board,
    plot_small_work,
)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_verdicts_record_and_print_one_line(capsys):
    verdicts = Verdicts()
    verdicts("A claim", "false", "because (lesson 01)", measured=True, published=1 > 0)
    assert verdicts == [("A claim", "false", "because (lesson 01)")]
    assert capsys.readouterr().out == "Verdict: false. because (lesson 01)\n"


def test_verdicts_refuse_evidence_that_does_not_hold():
    verdicts = Verdicts()
    with pytest.raises(AssertionError, match="second"):
        verdicts("A claim", "true", "why", first=True, second=False)
    with pytest.raises(ValueError, match="answer"):
        verdicts("A claim", "maybe", "why")
    assert verdicts == []


def test_small_work_draws_every_round_and_the_published_ratios():
    cpu = {1: [3e-6, 4e-6, 5e-6], 4096: [6e-6, 9e-6, 7e-6]}
    fig, (ax, ax_pub) = plot_small_work(cpu)
    assert list(ax.lines[-1].get_ydata()) == pytest.approx([3.0, 6.0])        # best round per size
    assert sum(len(line.get_xdata()) for line in ax.lines[:-1]) == 6          # every round drawn
    assert [bar.get_width() for bar in ax_pub.patches] == pytest.approx(
        [p.gpu_s / p.cpu_s for p in PUBLISHED_GPU_VS_CPU])
    hatched = [bool(bar.get_hatch()) for bar in ax_pub.patches]
    assert hatched == [not p.synchronised for p in PUBLISHED_GPU_VS_CPU]
    assert ax_pub.get_title() == "Published, not measured here"
    ticks = " ".join(t.get_text() for t in ax_pub.get_yticklabels())
    assert "#42265 (2020)" in ticks and "GeForce GTX 1080" in ticks and "does not name" in ticks
    assert "measured here" in ax.get_legend_handles_labels()[1][0]
    footer = " ".join(t.get_text() for t in fig.texts)
    assert "issues/42265" in footer and "issues/2219" in footer and "someone else's data" in footer


def test_published_timings_are_as_printed_in_the_reports():
    # pytorch/pytorch#42265 (description, 2020): per call, ms; #2219 (description, 2017): 100 calls, s
    assert [(p.source, p.work, p.cpu_s, p.gpu_s, p.synchronised) for p in PUBLISHED_GPU_VS_CPU] == [
        ("pytorch/pytorch#42265", "torch.inverse, 4x4", 0.07149e-3, 8.78560e-3, True),
        ("pytorch/pytorch#42265", "torch.inverse, 1024x1024", 9.54982e-3, 17.25289e-3, True),
        ("pytorch/pytorch#2219", "torch.inverse, 3x3", 0.003675, 2.056742, False)]
    ratios = [round(p.gpu_s / p.cpu_s, 2) for p in PUBLISHED_GPU_VS_CPU[:2]]
    assert ratios == [122.89, 1.81]                 # printed as "122.90x" and "1.81x" from unrounded times
    assert PUBLISHED_GPU_VS_CPU[2].gpu == "GeForce GTX 1080, PyTorch 0.1.12"
    assert all(p.url.endswith(p.source.split("#")[1]) for p in PUBLISHED_GPU_VS_CPU)


def test_verdict_board_has_one_coloured_row_per_claim():
    verdicts = [("A claim", "true", "because (lesson 01)"), ("B claim", "false", "no (lessons 02, 06)"),
                ("C claim", "it depends", "see (lesson 07)")]
    fig, ax = draw_verdict_board(verdicts)
    colours = [matplotlib.colors.to_hex(p.get_facecolor()) for p in ax.patches]
    assert colours == [VERDICT_COLORS[v] for _, v, _ in verdicts]
    text = [t.get_text() for t in ax.texts]
    assert "13.2  B claim" in text and "it depends" in text
    assert "lessons 02, 06" in text and "lesson 01" in text  # plural only where several are named
    assert "schematic" in ax.get_title()
