"""The pictures of lesson 01 draw the real bits and the real gaps between floats."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from helpers.show.rounding import draw_float_bits, float_gaps, plot_float_spacing  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _texts(ax):
    return [t.get_text() for t in ax.texts]


@pytest.mark.parametrize("dtype, width", [(torch.float32, 32), (torch.bfloat16, 16), (torch.float64, 64)])
def test_draw_float_bits_draws_one_box_per_bit_of_the_encoding(dtype, width):
    fig, ax = draw_float_bits(0.1, dtype)
    assert len(ax.patches) == width
    raw = torch.tensor(0.1, dtype=dtype)
    int_dtype = {32: torch.int32, 16: torch.int16, 64: torch.int64}[width]
    expected = format(int(raw.view(int_dtype).item()) & ((1 << width) - 1), f"0{width}b")
    assert "".join(_texts(ax)[:width]) == expected  # the boxes spell the value's bits, in order
    assert repr(raw.double().item()) in ax.get_title()  # and the title names the stored value


def test_draw_float_bits_explains_the_fields_of_a_normal_and_a_subnormal_value():
    fig, ax = draw_float_bits(0.1)
    texts = _texts(ax)
    assert "123 - 127 = -4" in texts and "+" in texts
    assert any(t.startswith("value = +1.600000024 x 2^-4 = 0.1000000014901161") for t in texts)
    fig, ax = draw_float_bits(-1e-40)
    texts = _texts(ax)
    assert "all zeros: subnormal, -126" in texts and "-" in texts
    assert any("no implicit 1" in t for t in texts)
    fig, ax = draw_float_bits(float("inf"), torch.float16)
    assert "all ones: inf" in _texts(ax)


def test_draw_float_bits_refuses_a_format_it_cannot_draw():
    with pytest.raises(TypeError, match="float16, bfloat16, float32 or float64"):
        draw_float_bits(1.0, torch.int32)


def test_float_gaps_double_at_each_power_of_two_and_stay_flat_among_subnormals():
    gaps = [gap for _, _, gap in float_gaps(torch.float32, -2, 2)]
    assert gaps == [2.0**-25, 2.0**-24, 2.0**-23, 2.0**-22]
    sub = float_gaps(torch.float32, -149, -124)
    assert [gap for _, _, gap in sub[:23]] == [2.0**-149] * 23  # every subnormal binade: 2^-149
    assert sub[23][2] == 2.0**-149 and sub[24][2] == 2.0**-148  # 2^-126 keeps it; then it doubles
    with pytest.raises(ValueError, match="below float32's smallest subnormal"):
        float_gaps(torch.float32, -150, -140)


def test_plot_float_spacing_draws_the_measured_steps_and_shades_only_the_subnormals():
    fig, ax = plot_float_spacing(torch.float32, -3, 3)
    steps = ax.get_lines()[0]
    assert list(steps.get_ydata()) == [gap for _, _, gap in float_gaps(torch.float32, -3, 3)] + [2.0**-21]
    assert not ax.patches  # no subnormal in [1/8, 8)
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    fig, ax = plot_float_spacing(torch.float32, -149, -120)
    (shade,) = ax.patches
    assert shade.get_x() == 2.0**-149  # the subnormal band starts at the left edge ...
    assert "subnormals" in [t.get_text() for t in ax.get_legend().get_texts()][-1]
