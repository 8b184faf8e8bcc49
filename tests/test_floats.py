"""Unit tests for helpers.floats: anatomy, ULPs, mantissa rounding and the summation orders."""

import math
from fractions import Fraction

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
from helpers.floats import correctly_rounded_float32, random_float32, round_to_nearest, two_sum

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


def test_anatomy_takes_an_int_exactly_not_through_float64():
    # float(2**80 + 2**56 + 1) is 2**80 (float64 keeps 53 bits), an exact float32 value: rounding the
    # int through float64 would give 2**80; rounded once, 2**56 + 1 is past half an ULP (2**56) of 2**80
    a = float_anatomy(2**80 + 2**56 + 1)
    assert a.requested == 2**80 + 2**56 + 1 and a.stored == 2**80 + 2**57
    assert a.rounding_error == float(2**57 - 2**56 - 1)
    # an integer tensor too: through float64, 2**62 + 2**38 + 1 becomes a tie that goes to 2**62
    assert float_anatomy(torch.tensor(2**62 + 2**38 + 1)).stored == 2**62 + 2**39
    huge = float_anatomy(10**400)  # beyond float64's range, so float() would raise OverflowError
    assert huge.kind == "inf" and huge.rounding_error == math.inf
    assert float_anatomy(-(10**400)).stored == -math.inf


def test_anatomy_rounds_once_where_a_conversion_through_float32_rounds_twice():
    # through float32 both become 1 + 2**-11 (or 1 + 2**-8), an exact tie, which then goes to 1.0
    assert float_anatomy(1 + 2**-11 + 2**-40, torch.float16).stored == 1.0009765625
    assert float_anatomy(1 + 2**-8 + 2**-40, torch.bfloat16).stored == 1.0078125
    assert float_anatomy(-(1 + 2**-11 + 2**-40), torch.float16).stored == -1.0009765625
    assert float(np.float16(1 + 2**-11 + 2**-40)) == 1.0009765625  # NumPy rounds once too
    # a true tie still goes to the even neighbour
    assert float_anatomy(1 + 2**-11, torch.float16).stored == 1.0
    assert float_anatomy(1 + 2**-8, torch.bfloat16).stored == 1.0


@given(st.floats(allow_nan=False))
def test_anatomy_in_float16_matches_numpy(x):
    with np.errstate(over="ignore"):
        expected = float(np.float16(x))
    a = float_anatomy(x, torch.float16)
    assert a.stored == expected and math.copysign(1, a.stored) == math.copysign(1, expected)


@given(st.floats(allow_nan=False))
def test_round_to_nearest_matches_numpy_for_float32_and_float16(x):
    with np.errstate(over="ignore"):
        assert round_to_nearest(x, torch.float32) == float(np.float32(x))
        assert round_to_nearest(x, torch.float16) == float(np.float16(x))
    assert round_to_nearest(x, torch.float64) == x


@given(finite32)
def test_round_to_nearest_to_bfloat16_matches_pytorch_from_float32(x):
    # from float32, PyTorch's bfloat16 conversion rounds once, so it is a fair reference here
    assert round_to_nearest(x, torch.bfloat16) == torch.tensor(x).to(torch.bfloat16).item()


def test_round_to_nearest_edges():
    assert round_to_nearest(Fraction(1, 3), torch.float32) == float(np.float32(1 / 3))
    assert round_to_nearest(65519, torch.float16) == 65504.0  # below the halfway point to 2**16
    assert round_to_nearest(65520, torch.float16) == math.inf  # halfway: ties to even overflow
    assert round_to_nearest(-(2**128), torch.float32) == -math.inf
    # half the smallest subnormal is a tie between 0 and 2**-149: it goes to the even one, 0
    assert round_to_nearest(Fraction(1, 2**150), torch.float32) == 0.0
    assert round_to_nearest(Fraction(3, 2**151), torch.float32) == 2.0**-149
    assert math.copysign(1, round_to_nearest(-0.0)) == -1 and round_to_nearest(0) == 0.0
    assert math.isnan(round_to_nearest(math.nan)) and round_to_nearest(-math.inf) == -math.inf


@given(finite32, finite32)
def test_float32_addition_is_the_exact_sum_rounded_once_and_float64_gets_it_too(a, b):
    # the exact sum can need far more than 53 bits, yet rounding the float64 sum to float32 is right:
    # double rounding is innocuous when the wider format has at least 2 * 24 + 2 bits
    expected = round_to_nearest(Fraction(a) + Fraction(b), torch.float32)
    with np.errstate(over="ignore"):
        got = (torch.tensor(a) + torch.tensor(b)).item()
    assert got == expected
    a64, b64 = torch.tensor(a, dtype=torch.float64), torch.tensor(b, dtype=torch.float64)
    assert (a64 + b64).float().item() == expected


def test_a_fused_multiply_add_through_float64_can_round_twice_wrongly():
    # 24929 * 673 = 2**24 + 1 exactly, a float32 midpoint; c nudges the exact result above it
    a, b, c = 24929.0, 673.0, 2.0**-40
    assert round_to_nearest(Fraction(a) * Fraction(b) + Fraction(c), torch.float32) == 2**24 + 2
    # float64 absorbs c, leaving an exact tie, which float32 then sends to the even 2**24: not innocuous
    assert float(np.float32(a * b + c)) == 2**24
    # correctly_rounded_float32 does not vouch for that float64 value
    assert not correctly_rounded_float32(torch.tensor([a * b + c], dtype=torch.float64))[1].item()


def test_correctly_rounded_float32_flags_values_next_to_a_midpoint():
    midpoint = 1 + 2**-24  # halfway between 1 and the next float32
    values = [midpoint, midpoint + 2**-52, midpoint + 5 * 2**-52, 1.0, 3.0, math.inf]
    approx = torch.tensor(values, dtype=torch.float64)
    rounded, certain = correctly_rounded_float32(approx)
    assert rounded.dtype == torch.float32
    assert rounded[:5].tolist() == [1.0, 1 + 2**-23, 1 + 2**-23, 1.0, 3.0]
    assert certain.tolist() == [False, False, True, True, True, False]
    assert correctly_rounded_float32(approx, margin=0)[1].tolist()[:2] == [False, True]


@given(st.floats(min_value=-1e30, max_value=1e30, allow_nan=False), st.integers(min_value=-4, max_value=4))
def test_correctly_rounded_float32_is_right_for_any_value_within_the_margin(y, k):
    approx = torch.tensor([y], dtype=torch.float64)
    rounded, certain = correctly_rounded_float32(approx, margin=4)
    if certain.item():
        # the exact value may be anywhere within 4 float64 ULPs of approx: the rounding stays the same
        exact = Fraction(y) + k * Fraction(ulp(approx).item())
        assert round_to_nearest(exact, torch.float32) == rounded.item()


def test_random_float32_uses_every_bit_and_repeats():
    x = random_float32((100_000,), exponents=(-30, 30), generator=torch.Generator().manual_seed(0))
    y = random_float32((100_000,), exponents=(-30, 30), generator=torch.Generator().manual_seed(0))
    assert x.dtype == torch.float32 and torch.equal(x, y)
    exponents = torch.frexp(x).exponent - 1
    assert exponents.min().item() == -30 and exponents.max().item() == 30
    assert 0.45 < (x < 0).float().mean().item() < 0.55
    assert 0.45 < (x.view(torch.int32) & 1).float().mean().item() < 0.55  # the last mantissa bit is random


def test_the_uniform_values_random_float32_replaces_sit_on_a_coarse_grid():
    # its docstring's contrast: 2 * torch.rand(n) - 1 gives multiples of 2**-23, and adding two never rounds
    x = 2 * torch.rand(100_000, generator=torch.Generator().manual_seed(0)) - 1
    assert torch.equal(x.double() * 2**23, (x.double() * 2**23).round())
    assert not torch.equal(x.double() * 2**22, (x.double() * 2**22).round())
    p, q = x[:50_000], x[50_000:]
    assert torch.equal((p + q).double(), p.double() + q.double())


@given(st.floats(min_value=-1e300, max_value=1e300), st.floats(min_value=-1e300, max_value=1e300))
def test_two_sum_recovers_what_rounding_lost(a, b):
    s, err = two_sum(torch.tensor([a], dtype=torch.float64), torch.tensor([b], dtype=torch.float64))
    assert Fraction(s.item()) + Fraction(err.item()) == Fraction(a) + Fraction(b)
    assert (err.item() == 0) == (Fraction(s.item()) == Fraction(a) + Fraction(b))


def test_two_sum_in_float32():
    s, err = two_sum(torch.tensor([2.0**24]), torch.tensor([1.0]))
    assert s.item() == 2.0**24 and err.item() == 1.0


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


# --- round_mantissa ----------------------------------------------------------------------------


@given(st.lists(finite32, min_size=1, max_size=20))
def test_round_mantissa_to_7_bits_is_bfloat16(values):
    x = torch.tensor(values, dtype=torch.float32)
    assert torch.equal(round_mantissa(x, 7), x.to(torch.bfloat16).float())


@given(st.lists(finite32, min_size=1, max_size=20), st.integers(min_value=0, max_value=23))
@settings(max_examples=100)
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


def test_round_mantissa_keeps_the_shape_of_a_non_contiguous_tensor():
    x = torch.randn(3, 4, generator=torch.Generator().manual_seed(0)).t()
    assert torch.equal(round_mantissa(x, 10), round_mantissa(x.contiguous(), 10))


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


def test_unit_roundoff_is_half_the_gap_above_one():
    for fmt, dtype in (("float16", torch.float16), ("bfloat16", torch.bfloat16), ("float32", torch.float32)):
        assert unit_roundoff(fmt) == torch.finfo(dtype).eps / 2
    assert unit_roundoff("tf32") == unit_roundoff("float16") == 2.0**-11


def test_matmul_error_is_flat_in_k_for_rounded_inputs():
    # each input rounds with an RMS relative error of about 0.42 u; two per product: about 0.6 u
    for fmt in ("tf32", "bfloat16"):
        for k in (256, 4096):
            assert 0.5 < matmul_error(fmt, k)["rel_fro"] / unit_roundoff(fmt) < 0.7
    assert matmul_error("float32", 256)["rel_fro"] < 1e-6


def test_matmul_error_depends_on_the_data_not_only_on_k():
    # the error follows the products' size sqrt(sum (a b)^2), about 0.6 u for any data ...
    u = unit_roundoff("tf32")
    errors = {
        (data, k): matmul_error("tf32", k, data=data)
        for data in ("normal", "positive", "cancelling")
        for k in (256, 4096)
    }
    for e in errors.values():
        assert 0.4 < e["rel_to_products"] / u < 0.75
    # ... so relative to C it is flat for zero-mean data, shrinks like 1/sqrt(k) for positive data
    # and has no bound under cancellation
    assert 0.5 < errors["normal", 4096]["rel_fro"] / errors["normal", 256]["rel_fro"] < 2
    assert 3 < errors["positive", 256]["rel_fro"] / errors["positive", 4096]["rel_fro"] < 5.5
    assert errors["cancelling", 4096]["rel_fro"] > 1e4 * u
    # the largest error over the mean |C| (PyTorch's CUDA notes' measure) exceeds the Frobenius ratio
    assert errors["normal", 4096]["max_over_mean"] > 3 * errors["normal", 4096]["rel_fro"]
    with pytest.raises(ValueError, match="unknown data"):
        matmul_error("tf32", 256, data="uniform")


def test_matmul_error_takes_a_rounding_function():
    # a function stands for a format: the identity is float32, rounding to nearest (ties away) is "tf32"
    assert matmul_error(lambda t: t, 256) == matmul_error("float32", 256)
    assert matmul_error(lambda t: round_mantissa(t, 10, ties="away"), 256) == matmul_error("tf32", 256)
    # truncating to 10 mantissa bits errs by up to a whole gap, always towards zero: larger errors
    truncated = matmul_error(lambda t: (t.view(torch.int32) & -(1 << 13)).view(torch.float32), 1024)
    assert 2 < truncated["rel_fro"] / matmul_error("tf32", 1024)["rel_fro"] < 3.5


def test_gamma_is_defined_only_below_k_u_equal_one():
    from helpers.floats import gamma

    assert gamma(0, 2.0**-24) == 0.0
    assert math.isclose(gamma(1024, 2.0**-24), 1024 * 2.0**-24 / (1 - 1024 * 2.0**-24))
    assert gamma(1024, 2.0**-11) == 1.0  # defined, but it allows a 100% error
    for k in (2048, 4096):  # the old recipe's k u = 1 (division by zero) and k u = 2 (gamma = -2)
        with pytest.raises(ValueError, match="k \\* u < 1"):
            gamma(k, 2.0**-11)


@pytest.mark.parametrize("k", [2048, 4096])
def test_matmul_error_bound_holds_for_float16_inputs_and_catches_float16_accumulation(k):
    from helpers.floats import matmul_error_bound

    g = torch.Generator().manual_seed(k)
    a, b = torch.rand(32, k, generator=g), torch.rand(k, 32, generator=g)  # positive: no cancellation
    exact = a.double() @ b.double()
    bound = matmul_error_bound(a, b, u_in=2.0**-11, u_acc=2.0**-24)
    assert bound.dtype == torch.float64 and bound.shape == exact.shape and bool((bound > 0).all())
    # float16 inputs, float32 accumulation in the library's order: inside the bound, entry by entry
    good = a.half().float() @ b.half().float()
    assert bool(((good.double() - exact).abs() <= bound).all())
    # a float16 running sum (the bug of lesson 03, section 3.8): outside the bound everywhere
    acc = torch.zeros(32, 32, dtype=torch.float16)
    ah, bh = a.half(), b.half()
    for i in range(k):
        acc = acc + ah[:, i : i + 1] * bh[i : i + 1, :]
    assert bool(((acc.double() - exact).abs() > bound).all())
    # the old recipe, gamma_k with the inputs' u, is undefined here
    with pytest.raises(ValueError, match="u_in"):
        matmul_error_bound(a, b, u_in=0.0, u_acc=2.0**-11)


def test_matmul_error_bound_assumes_inputs_in_the_normal_range():
    from helpers.floats import matmul_error_bound

    # float16 subnormals keep fewer bits: their relative rounding error exceeds u_in (the docstring's case)
    a, b = torch.tensor([[4e-8, 1e-6]]), torch.tensor([[1.0], [1.0]])
    error = ((a.half().float() @ b.half().float()).double() - a.double() @ b.double()).abs().item()
    bound = matmul_error_bound(a, b, u_in=2.0**-11, u_acc=2.0**-24).item()
    assert error > 30 * bound
    # scaled into float16's normal range, the same inputs are within the bound
    a = a * 2.0**20
    error = ((a.half().float() @ b.half().float()).double() - a.double() @ b.double()).abs().item()
    assert error <= matmul_error_bound(a, b, u_in=2.0**-11, u_acc=2.0**-24).item()


def test_matmul_error_bound_for_float32_inputs_is_gamma_k():
    from helpers.floats import gamma, matmul_error_bound

    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(8, 1000, generator=g), torch.randn(1000, 8, generator=g)
    bound = matmul_error_bound(a, b, u_in=0.0, u_acc=2.0**-24)
    assert torch.allclose(bound, gamma(1000, 2.0**-24) * (a.double().abs() @ b.double().abs()), rtol=1e-12)
    assert bool(((a @ b).double() - a.double() @ b.double()).abs().le(bound).all())


# --- tf32_linear (lesson 10) -------------------------------------------------------------------


def _tf32_linear_case(shape=(8, 20), bias=True):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(*shape, generator=g, requires_grad=True)
    w = torch.randn(16, shape[-1], generator=g, requires_grad=True)
    b = torch.randn(16, generator=g, requires_grad=True) if bias else None
    grad = torch.randn(*shape[:-1], 16, generator=g)
    return x, w, b, grad


def test_tf32_linear_rounds_the_operands_of_all_three_products():
    from helpers.floats import tf32_linear

    def r(t):
        return round_to_format(t.detach(), "tf32")

    x, w, b, grad = _tf32_linear_case()
    out = tf32_linear(x, w, b)
    out.backward(grad)
    assert torch.equal(out, torch.nn.functional.linear(r(x), r(w), b.detach()))
    assert torch.equal(x.grad, r(grad) @ r(w))                     # the input's gradient: grad @ W
    assert torch.equal(w.grad, r(grad).T @ r(x))                   # the weight's gradient: grad.T @ x
    assert torch.equal(b.grad, grad.sum(0))                         # the bias gradient is a float32 sum
    assert not torch.equal(x.grad, grad @ r(w))                     # so the incoming gradient was rounded


def test_tf32_linear_differs_from_rounding_the_forward_operands_only():
    from helpers.floats import tf32_linear

    def rounded_forward_only(x, w, b):   # the stand-in lesson 10 used before: gradients pass straight through
        def r(t):
            return t + (round_to_format(t.detach(), "tf32") - t.detach())
        return torch.nn.functional.linear(r(x), r(w), b)

    grads = []
    for f in (tf32_linear, rounded_forward_only):
        x, w, b, grad = _tf32_linear_case()
        f(x, w, b).backward(grad)
        grads.append((x.grad, w.grad))
    assert not torch.equal(grads[0][0], grads[1][0]) and not torch.equal(grads[0][1], grads[1][1])


def test_tf32_linear_batch_dimensions_no_bias_and_inputs_without_grad():
    from helpers.floats import tf32_linear

    def r(t):
        return round_to_format(t.detach(), "tf32")

    x, w, _, grad = _tf32_linear_case(shape=(2, 3, 20), bias=False)
    out = tf32_linear(x, w)
    assert out.shape == (2, 3, 16)
    out.backward(grad)
    assert torch.equal(x.grad, r(grad) @ r(w))
    assert torch.equal(w.grad, r(grad).reshape(-1, 16).T @ r(x).reshape(-1, 20))
    x, w, b, grad = _tf32_linear_case()
    tf32_linear(x.detach(), w, b).backward(grad)                  # an input that needs no gradient
    assert w.grad is not None and b.grad is not None


def test_tf32_linear_errors_are_at_tf32_level():
    from helpers.floats import tf32_linear

    x, w, b, grad = _tf32_linear_case()
    tf32_linear(x, w, b).backward(grad)
    x64, w64 = x.detach().double().requires_grad_(), w.detach().double().requires_grad_()
    torch.nn.functional.linear(x64, w64, b.detach().double()).backward(grad.double())
    for got, exact in ((x.grad, x64.grad), (w.grad, w64.grad)):
        rel = ((got.double() - exact).norm() / exact.norm()).item()
        assert 2.0**-16 < rel < 2.0**-9                  # TF32's u is 2^-11: far above float32's 2^-24


# --- float64 ULP distances beyond int64, and sums whose partial sums overflow ----------------


def test_ulp_distance_float64_opposite_signs_does_not_wrap():
    from helpers.floats import ULP_DISTANCE_CAP, max_ulp_distance

    a, b = torch.tensor([2.0], dtype=torch.float64), torch.tensor([-2.0], dtype=torch.float64)
    exact = 2 * 0x4000_0000_0000_0000  # 2.0's bits are 0x4000...; the distance is 2**63
    assert ulp_distance(a, b).item() == ULP_DISTANCE_CAP  # saturates, never negative
    assert ulp_distance(b, a).item() == ULP_DISTANCE_CAP
    assert max_ulp_distance(a, b) == exact
    big = torch.tensor([1.7e308], dtype=torch.float64)
    assert max_ulp_distance(big, -big) == 2 * big.view(torch.int64).item()
    # distances that fit are unchanged, also across zero
    tiny = torch.tensor([5e-324], dtype=torch.float64)
    assert ulp_distance(tiny, -tiny).item() == 2 and max_ulp_distance(tiny, -tiny) == 2


def test_ulp_distance_narrow_dtypes_unchanged_across_signs():
    from helpers.floats import max_ulp_distance

    narrow = [(torch.float32, torch.int32), (torch.float16, torch.int16), (torch.bfloat16, torch.int16)]
    for dtype, int_dtype in narrow:
        a, b = torch.tensor([2.0], dtype=dtype), torch.tensor([-2.0], dtype=dtype)
        expected = 2 * a.view(int_dtype).item()
        assert ulp_distance(a, b).item() == expected and max_ulp_distance(a, b) == expected


f64 = st.floats(allow_nan=False, allow_infinity=False)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(f64, f64), min_size=1, max_size=8))
def test_max_ulp_distance_matches_python_int_arithmetic(pairs):
    from helpers.floats import ULP_DISTANCE_CAP, max_ulp_distance

    a = torch.tensor([p[0] for p in pairs], dtype=torch.float64)
    b = torch.tensor([p[1] for p in pairs], dtype=torch.float64)

    def ordinal(v):
        i = int(torch.tensor(v, dtype=torch.float64).view(torch.int64))
        m = i & 0x7FFF_FFFF_FFFF_FFFF
        return -m if i < 0 else m

    exact = [abs(ordinal(x) - ordinal(y)) for x, y in pairs]
    assert max_ulp_distance(a, b) == max(exact)
    assert ulp_distance(a, b).tolist() == [min(d, ULP_DISTANCE_CAP) for d in exact]


def test_sum_exact_survives_an_intermediate_overflow():
    x = torch.tensor([1e308, 1e308, -1e308], dtype=torch.float64)
    assert sum_exact(x).item() == 1e308
    rows = torch.tensor([[1e308, 1e308, -1e308], [1.0, 2.0, 3.0]], dtype=torch.float64)
    assert sum_exact(rows).tolist() == [1e308, 6.0]
    with pytest.raises(OverflowError):  # the exact sum itself is too large
        sum_exact(torch.tensor([1e308, 1e308], dtype=torch.float64))
