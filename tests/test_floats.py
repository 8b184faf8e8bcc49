"""Unit tests for helpers.floats: anatomy, ULPs, mantissa rounding and the summation orders."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import (
    float_anatomy,
    matmul_error,
    round_mantissa,
    round_to_format,
    sum_exact,
    sum_kahan,
    sum_pairwise,
    sum_sequential,
    ulp,
    ulp_distance,
    unit_roundoff,
)

finite32 = st.floats(width=32, allow_nan=False, allow_infinity=False)
DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]


# --- float_anatomy -----------------------------------------------------------------------------


def test_anatomy_of_one_point_zero_in_every_format():
    expected = {
        torch.float16: (5, 10),
        torch.bfloat16: (8, 7),
        torch.float32: (8, 23),
        torch.float64: (11, 52),
    }
    for dtype, (e, m) in expected.items():
        a = float_anatomy(1.0, dtype)
        assert (a.sign, a.exponent, a.kind) == (0, 0, "normal")
        assert a.exponent_bits == "0" + "1" * (e - 1)
        assert a.mantissa_bits == "0" * m


def test_anatomy_of_point_one_shows_the_rounding():
    a = float_anatomy(0.1, torch.float32)
    assert a.mantissa_bits == "10011001100110011001101"
    assert a.exponent == -4
    assert a.stored == float(np.float32(0.1)) and a.rounding_error != 0.0


def test_anatomy_special_values():
    assert float_anatomy(0.0).kind == "zero"
    assert float_anatomy(-0.0).sign == 1
    assert float_anatomy(math.inf).kind == "inf"
    assert float_anatomy(math.nan).kind == "nan"
    assert float_anatomy(1e-40).kind == "subnormal" and float_anatomy(1e-40).exponent == -126
    assert float_anatomy(1e5, torch.float16).kind == "inf"  # beyond float16's 65504


@given(finite32, st.sampled_from(DTYPES))
def test_anatomy_reassembles_the_stored_value(x, dtype):
    a = float_anatomy(x, dtype)
    if a.kind in ("normal", "subnormal"):
        lead = 1 if a.kind == "normal" else 0
        m = lead + int(a.mantissa_bits, 2) / 2 ** len(a.mantissa_bits)
        assert (-1) ** a.sign * m * 2.0**a.exponent == a.stored


def test_anatomy_accepts_a_one_element_tensor_and_renders():
    a = float_anatomy(torch.tensor([2.5]))
    assert a.stored == 2.5
    assert "mantissa" in str(a) and "<table>" in a._repr_html_()


@pytest.mark.parametrize("bad, error", [("0.1", TypeError), (True, TypeError), (torch.ones(2), ValueError)])
def test_anatomy_rejects_bad_values(bad, error):
    with pytest.raises(error):
        float_anatomy(bad)


def test_anatomy_rejects_integer_dtypes():
    with pytest.raises(TypeError, match="not supported"):
        float_anatomy(1.0, torch.int32)


# --- ulp and ulp_distance ----------------------------------------------------------------------


def test_ulp_of_one_is_eps_in_every_format():
    for dtype in DTYPES:
        assert ulp(torch.tensor(1.0, dtype=dtype)).item() == torch.finfo(dtype).eps


def test_ulp_doubles_at_powers_of_two():
    x = torch.tensor([2.0**24 - 1, 2.0**24, 1000.0])
    assert ulp(x).tolist() == [1.0, 2.0, 2.0**-14]


@given(finite32.filter(lambda v: abs(v) < 3e38))
def test_ulp_matches_numpy_spacing(x):
    assert ulp(torch.tensor(x)).item() == abs(float(np.spacing(np.float32(abs(x)))))


@given(finite32, st.integers(min_value=0, max_value=50))
def test_ulp_distance_counts_nextafter_steps(x, k):
    a = torch.tensor([x])
    b = a.clone()
    for _ in range(k):
        b = torch.nextafter(b, torch.tensor([math.inf]))
    if torch.isfinite(b).all():
        assert ulp_distance(a, b).item() == k
        assert ulp_distance(b, a).item() == k


def test_ulp_distance_across_zero_and_signed_zero():
    tiny = torch.tensor([1e-45])  # the smallest positive float32 subnormal
    assert ulp_distance(-tiny, tiny).item() == 2
    assert ulp_distance(torch.tensor([-0.0]), torch.tensor([0.0])).item() == 0


@pytest.mark.parametrize("dtype", DTYPES)
def test_ulp_distance_in_each_dtype(dtype):
    one = torch.ones(3, dtype=dtype)
    nxt = torch.nextafter(one, torch.full_like(one, 2.0))
    assert ulp_distance(one, nxt).tolist() == [1, 1, 1]


def test_ulp_distance_rejects_bad_input():
    with pytest.raises(TypeError, match="one dtype"):
        ulp_distance(torch.ones(2), torch.ones(2, dtype=torch.float64))
    with pytest.raises(ValueError, match="shape"):
        ulp_distance(torch.ones(2), torch.ones(3))
    with pytest.raises(ValueError, match="NaN"):
        ulp_distance(torch.tensor([math.nan]), torch.tensor([1.0]))
    with pytest.raises(TypeError, match="torch.Tensor"):
        ulp_distance([1.0], torch.ones(1))
    with pytest.raises(TypeError, match="not supported"):
        ulp(torch.ones(2, dtype=torch.int64))


# --- round_mantissa ----------------------------------------------------------------------------


@given(st.lists(finite32, min_size=1, max_size=20))
def test_round_mantissa_to_7_bits_is_bfloat16(values):
    x = torch.tensor(values, dtype=torch.float32)
    assert torch.equal(round_mantissa(x, 7), x.to(torch.bfloat16).float())


@given(st.lists(finite32, min_size=1, max_size=20), st.integers(min_value=0, max_value=23))
@settings(max_examples=200)
def test_round_mantissa_is_nearest_and_idempotent(values, bits):
    x = torch.tensor(values, dtype=torch.float32)
    r = round_mantissa(x, bits)
    assert torch.equal(round_mantissa(r, bits), r)
    finite = torch.isfinite(r)
    # the rounding error is at most half a ULP of the shorter format
    err = (r.double() - x.double()).abs()[finite]
    bound = (ulp(x).double() * 2.0 ** (23 - bits) / 2)[finite]
    assert bool((err <= bound).all())
    assert bool(((r.sign() * x.sign())[finite] >= 0).all())  # tiny values may round to zero, never flip


def test_round_mantissa_ties_go_to_even_and_specials_pass_through():
    # 1 + 2^-11 is halfway between two 10-bit neighbours: ties go to the even one (1.0)
    x = torch.tensor([1 + 2**-11, 1 + 3 * 2**-11, math.inf, -math.inf, math.nan])
    r = round_mantissa(x, 10)
    assert r[:4].tolist() == [1.0, 1 + 4 * 2**-11, math.inf, -math.inf]
    assert math.isnan(r[4].item())


def test_round_mantissa_keeps_shape_and_rejects_bad_input():
    x = torch.randn(3, 4, generator=torch.Generator().manual_seed(0)).t()  # non-contiguous
    assert round_mantissa(x, 10).shape == (4, 3)
    with pytest.raises(TypeError, match="float32"):
        round_mantissa(x.double(), 10)
    with pytest.raises(ValueError, match="between 0 and 23"):
        round_mantissa(x, 24)
    with pytest.raises(TypeError, match="int"):
        round_mantissa(x, 10.0)


# --- summation orders --------------------------------------------------------------------------


def test_sum_sequential_is_left_to_right():
    x = torch.tensor([2.0**24, 1.0, 1.0])  # 2^24 + 1 rounds back to 2^24, twice
    assert sum_sequential(x).item() == 2.0**24
    assert sum_sequential(x.flip(0)).item() == 2.0**24 + 2


def test_sum_pairwise_is_a_tree():
    x = torch.tensor([2.0**24, 1.0, 1.0, 0.0])  # (2^24 + 1) + (1 + 0)
    assert sum_pairwise(x).item() == 2.0**24
    assert sum_pairwise(torch.tensor([1.0, 1.0, 2.0**24])).item() == 2.0**24 + 2


def test_sum_kahan_recovers_lost_bits():
    x = torch.tensor([2.0**24] + [1.0] * 100)
    assert sum_sequential(x).item() == 2.0**24
    assert sum_kahan(x).item() == 2.0**24 + 100


def test_sum_exact_is_exact():
    x = torch.tensor([1e20, 1.0, -1e20], dtype=torch.float64)
    assert sum_exact(x).item() == 1.0


small_floats = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, width=32)


@given(st.lists(small_floats, min_size=1, max_size=300))
def test_every_order_is_within_its_higham_bound(values):
    x = torch.tensor(values, dtype=torch.float32)
    n, u = len(values), 2.0**-24
    exact, scale = sum_exact(x).item(), x.double().abs().sum().item()
    gamma = lambda k: k * u / (1 - k * u)
    assert abs(sum_sequential(x).item() - exact) <= gamma(n - 1) * scale
    assert abs(sum_pairwise(x).item() - exact) <= gamma(math.ceil(math.log2(n))) * scale
    assert abs(sum_kahan(x).item() - exact) <= (2 * u + n * n * u * u) * scale + abs(exact) * u


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32, torch.float64])
def test_sums_keep_dtype_and_reduce_the_last_dimension(dtype):
    x = torch.ones(2, 3, 5, dtype=dtype)
    for f in (sum_sequential, sum_pairwise, sum_kahan):
        out = f(x)
        assert out.dtype == dtype and out.shape == (2, 3) and bool((out == 5).all())
    assert sum_exact(x).dtype == torch.float64


@pytest.mark.parametrize("f", [sum_sequential, sum_pairwise, sum_kahan, sum_exact])
def test_sums_reject_bad_input(f):
    with pytest.raises(ValueError, match="nothing to sum"):
        f(torch.ones(0))
    with pytest.raises(ValueError, match="nothing to sum"):
        f(torch.tensor(1.0))
    with pytest.raises(TypeError):
        f(torch.ones(3, dtype=torch.int32))
    with pytest.raises(TypeError):
        f([1.0, 2.0])


def test_sum_exact_rejects_non_finite():
    with pytest.raises(ValueError, match="finite"):
        sum_exact(torch.tensor([1.0, math.inf]))


def test_round_mantissa_ties_away_reproduces_the_tf32_report():
    # 1024.5 is a tie at 10 bits: IEEE's ties-to-even gives 1024, the GPU's ties-away 1025
    x = torch.tensor([1024.5, -1024.5, 1 + 2**-11, 1 + 2**-12])
    assert round_mantissa(x, 10, ties="away").tolist() == [1025.0, -1025.0, 1 + 2**-10, 1.0]
    assert round_mantissa(x, 10).tolist() == [1024.0, -1024.0, 1.0, 1.0]
    with pytest.raises(ValueError, match="ties"):
        round_mantissa(x, 10, ties="up")


@given(st.lists(finite32, min_size=1, max_size=20), st.integers(min_value=0, max_value=22))
def test_ties_away_differs_from_ties_even_only_on_ties(values, bits):
    x = torch.tensor(values, dtype=torch.float32)
    away, even = round_mantissa(x, bits, ties="away"), round_mantissa(x, bits)
    both_finite = torch.isfinite(away) & torch.isfinite(even)
    differ = (away != even) & both_finite
    # where they differ, x was exactly halfway: equally far from both results
    gap_away = (away.double() - x.double()).abs()
    gap_even = (even.double() - x.double()).abs()
    assert torch.equal(gap_away[differ], gap_even[differ])
    assert bool((away.abs() >= even.abs())[both_finite].all())


def test_round_to_format_matches_pytorch_conversions():
    x = torch.tensor([0.1, 257.0, 70000.0, 1e-8, -3.3])
    assert torch.equal(round_to_format(x, "bfloat16"), x.to(torch.bfloat16).float())
    assert torch.equal(round_to_format(x, "float16"), x.to(torch.float16).float())  # 70000 -> inf
    assert torch.equal(round_to_format(x, "tf32"), round_mantissa(x, 10, ties="away"))
    assert torch.equal(round_to_format(x, "float32"), x)
    assert math.isinf(round_to_format(x, "float16")[2].item())
    assert round_to_format(x, "tf32")[2] == 70016.0  # TF32 keeps float32's range
    with pytest.raises(ValueError, match="unknown format"):
        round_to_format(x, "fp8")
    with pytest.raises(TypeError, match="float32"):
        round_to_format(x.double(), "tf32")


def test_unit_roundoff_is_half_the_gap_above_one():
    for fmt, dtype in (("float16", torch.float16), ("bfloat16", torch.bfloat16), ("float32", torch.float32)):
        assert unit_roundoff(fmt) == torch.finfo(dtype).eps / 2
    assert unit_roundoff("tf32") == unit_roundoff("float16") == 2.0**-11
    with pytest.raises(ValueError):
        unit_roundoff("int8")


def test_matmul_error_is_flat_in_k_for_rounded_inputs():
    # each input rounds with an RMS relative error of about 0.42 u; two per product: about 0.6 u
    for fmt in ("tf32", "bfloat16"):
        for k in (256, 4096):
            assert 0.5 < matmul_error(fmt, k)["rel_fro"] / unit_roundoff(fmt) < 0.7
    assert matmul_error("float32", 256)["rel_fro"] < 1e-6
    with pytest.raises(ValueError, match="positive"):
        matmul_error("tf32", 0)
