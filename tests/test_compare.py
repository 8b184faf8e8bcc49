"""Unit tests for helpers.compare."""

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from helpers import compare, default_tolerances


def test_identical_tensors():
    x = torch.randn(100, generator=torch.Generator().manual_seed(0))
    c = compare(x, x.clone())
    assert c.bitwise_equal and c.close and c.max_ulp == 0 and c.max_abs_error == 0.0


def test_one_ulp_apart():
    x = torch.ones(4)
    y = torch.nextafter(x, torch.full_like(x, 2.0))
    c = compare(y, x)
    assert c.max_ulp == 1 and c.frac_bitwise_equal == 0.0 and c.close
    assert c.max_abs_error == torch.finfo(torch.float32).eps


def test_compares_in_the_less_precise_dtype():
    x64 = torch.tensor([0.1, 0.2], dtype=torch.float64)
    c = compare(x64, x64.float())
    assert c.dtype == torch.float32 and c.bitwise_equal
    assert (c.rtol, c.atol) == default_tolerances(torch.float32)
    assert compare(x64.half(), x64.bfloat16()).dtype == torch.bfloat16


def test_far_apart_fails_assert_close_and_agrees_with_torch():
    a, b = torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.001])
    c = compare(a, b)
    assert not c.close
    with pytest.raises(AssertionError):
        torch.testing.assert_close(a, b)
    assert math.isclose(c.max_rel_error, 0.001 / 2.001, rel_tol=1e-3)


@given(st.lists(st.floats(-1e3, 1e3, width=32), min_size=1, max_size=50), st.floats(0, 1e-3))
def test_verdict_matches_assert_close(values, shift):
    a = torch.tensor(values)
    b = a + shift
    c = compare(a, b)
    try:
        torch.testing.assert_close(a, b)
        expected = True
    except AssertionError:
        expected = False
    assert c.close is expected


def test_report_renders_as_text_and_html():
    c = compare(torch.ones(3), torch.ones(3))
    assert "max ULP distance" in str(c) and "<table>" in c._repr_html_()


@pytest.mark.parametrize(
    "a, b, error, match",
    [
        ([1.0], torch.ones(1), TypeError, "torch.Tensor"),
        (torch.ones(2), torch.ones(3), ValueError, "shape"),
        (torch.ones(0), torch.ones(0), ValueError, "empty"),
        (torch.ones(2, dtype=torch.int64), torch.ones(2), TypeError, "dtype"),
        (torch.tensor([math.nan]), torch.ones(1), ValueError, "NaN"),
        (torch.tensor([math.inf]), torch.ones(1), ValueError, "inf"),
    ],
)
def test_bad_input(a, b, error, match):
    with pytest.raises(error, match=match):
        compare(a, b)


def test_default_tolerances():
    assert default_tolerances(torch.float16) == (1e-3, 1e-5)
    assert default_tolerances(torch.bfloat16) == (1.6e-2, 1e-5)
    with pytest.raises(TypeError):
        default_tolerances(torch.int32)


def test_reduction_tolerances_grow_with_k_and_never_undercut_the_default():
    from helpers.compare import reduction_tolerances

    small, _ = reduction_tolerances(torch.float32, 1)
    assert small == default_tolerances(torch.float32)[0]
    big, atol = reduction_tolerances(torch.float32, 4096, scale=10.0)
    assert big == pytest.approx(4 * 2.0**-24 * 64) and atol == pytest.approx(10 * big)
    with pytest.raises(ValueError):
        reduction_tolerances(torch.float32, 0)
    with pytest.raises(ValueError):
        reduction_tolerances(torch.float32, 4, scale=0.0)


def test_reduction_tolerances_accept_any_order_and_reject_a_real_error():
    from helpers.compare import reduction_tolerances

    g = torch.Generator().manual_seed(0)
    for k in (64, 1024, 8192):
        a, b = torch.randn(32, k, generator=g), torch.randn(k, 32, generator=g)
        exact = a.double() @ b.double()
        rtol, atol = reduction_tolerances(torch.float32, k, scale=exact.abs().mean().item())
        torch.testing.assert_close((a @ b).double(), exact, rtol=rtol, atol=atol)
        wrong = (a @ b).double() * (1 + 1e-3)
        with pytest.raises(AssertionError):
            torch.testing.assert_close(wrong, exact, rtol=rtol, atol=atol)


def test_compare_with_explicit_tolerances_and_named():
    from helpers.compare import compare_named

    a, b = torch.ones(3), torch.ones(3) * (1 + 1e-4)
    assert not compare(a, b).close and compare(a, b, rtol=1e-3, atol=0.0).close
    with pytest.raises(ValueError, match="both"):
        compare(a, b, rtol=1e-3)
    named = compare_named({"x": a, "y": a}, {"x": b, "y": a}, {"x": (1e-3, 0.0)})
    assert named.close and not named.bitwise_equal
    assert [row[0] for row in named.table().rows] == ["x", "y"]
    assert not compare_named({"x": a}, {"x": b}).close
    with pytest.raises(KeyError, match="different tensors"):
        compare_named({"x": a}, {"z": a})


def test_compare_float64_opposite_signs_reports_the_exact_ulp_distance():
    a = torch.tensor([2.0], dtype=torch.float64)
    c = compare(a, -a)
    assert c.max_ulp == 2**63 and not c.close


def test_compare_rejects_a_value_that_overflows_the_compared_dtype():
    half = torch.tensor([1.0, 2.0], dtype=torch.float16)
    big = torch.tensor([1.0, 1e5], dtype=torch.float32)  # 1e5 is above float16's max (65504)
    with pytest.raises(ValueError, match="expected overflows"):
        compare(half, big)
    with pytest.raises(ValueError, match="actual overflows"):
        compare(big, half)


@pytest.mark.parametrize("bad", [math.inf, math.nan, -1.0])
def test_reduction_tolerances_reject_non_finite_or_negative_scale_and_safety(bad):
    from helpers.compare import reduction_tolerances

    with pytest.raises(ValueError, match="scale"):
        reduction_tolerances(torch.float32, 4, scale=bad)
    with pytest.raises(ValueError, match="safety"):
        reduction_tolerances(torch.float32, 4, safety=bad)
