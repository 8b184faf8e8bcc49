"""Lesson 03's figures draw the bit counts, ranges and rounded values they claim."""

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from helpers.show.precision import FORMATS, draw_format_layouts, draw_tie_rounding, format_range  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_format_layouts_draw_one_box_per_bit_of_each_field():
    fig, (bits_ax, range_ax) = draw_format_layouts()
    boxes = [p.get_gid() for p in bits_ax.patches if p.get_gid()]
    expected = {"float32": (8, 23), "TF32": (8, 10), "bfloat16": (8, 7), "float16": (5, 10)}
    for name, (exponent, mantissa) in expected.items():
        assert boxes.count(f"{name}:sign") == 1
        assert boxes.count(f"{name}:exponent") == exponent
        assert boxes.count(f"{name}:mantissa") == mantissa
    labels = [t.get_text() for t in bits_ax.texts]
    assert "float32 (32 bits)" in labels and "float16 (16 bits)" in labels and "bfloat16 (16 bits)" in labels
    assert "schematic" in bits_ax.get_title()


def test_format_layouts_draw_the_ranges_of_torch_finfo():
    fig, (bits_ax, range_ax) = draw_format_layouts()
    bars = {p.get_gid(): p for p in range_ax.patches}
    fi = torch.finfo(torch.float16)
    normal = bars["float16:normal"]
    assert math.isclose(normal.get_x(), math.log10(fi.smallest_normal))
    assert math.isclose(normal.get_x() + normal.get_width(), math.log10(65504))
    assert math.isclose(bars["float16:subnormal"].get_x(), math.log10(2.0**-24))
    assert math.isclose(bars["bfloat16:normal"].get_x() + bars["bfloat16:normal"].get_width(),
                        math.log10(torch.finfo(torch.bfloat16).max))
    assert "TF32:subnormal" not in bars and "TF32:normal" in bars  # TF32 subnormals: undocumented


def test_format_range_reads_finfo_and_refuses_unknown_names():
    assert format_range("float16") == (2.0**-24, 2.0**-14, 65504.0)
    assert format_range("bfloat16")[0] == 2.0**-133
    assert format_range("TF32") == (None, *format_range("float32")[1:])
    assert set(FORMATS) == {"float32", "TF32", "bfloat16", "float16"}
    with pytest.raises(ValueError, match="unknown format"):
        format_range("fp8")


def _arrow_ends(ax):  # each rule's arrow: where it points on the number line
    arrows = [a for a in ax.texts if (a.get_gid() or "").startswith("rule:")]
    return {a.get_gid().removeprefix("rule:"): a.xy[0] for a in arrows}


def test_tie_rounding_arrows_end_where_each_rule_rounds():
    fig, ax = draw_tie_rounding(1024.5, 10)
    ends = _arrow_ends(ax)
    assert ends["ties to even (IEEE 754 default)"] == 1024.0
    assert ends["ties away from zero (cvt.rna)"] == 1025.0
    assert ends["truncation (the extra bits dropped)"] == 1024.0
    # an independent check of the two rules: NumPy rounds 1024.5 to float16 (10 bits) to even
    assert float(np.float16(1024.5)) == 1024.0
    (dot,) = [line for line in ax.get_lines() if line.get_gid() == "value"]
    assert dot.get_xdata()[0] == 1024.5


def test_tie_rounding_of_a_value_that_is_not_a_tie():
    fig, ax = draw_tie_rounding(1.0 + 6 * 2.0**-13, 10)  # 3/4 of the way from 1 to 1 + 2^-10
    ends = _arrow_ends(ax)
    assert ends["ties to even (IEEE 754 default)"] == ends["ties away from zero (cvt.rna)"] == 1 + 2.0**-10
    assert ends["truncation (the extra bits dropped)"] == 1.0


def test_tie_rounding_refuses_values_with_nothing_to_round():
    with pytest.raises(ValueError, match="already fits"):
        draw_tie_rounding(1024.0, 10)
    with pytest.raises(ValueError, match="positive normal"):
        draw_tie_rounding(-1.5, 10)
