"""Unit tests for helpers.compare."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import compare, compare_named, default_tolerances, reduction_tolerances
from helpers.compare import NameMismatchError


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


@settings(max_examples=50)
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


_A = torch.ones(2)

#: (the call, the exception, a fragment of its message): a learner's own values arriving badly.
BAD_INPUTS = {
    "a list": (lambda: compare([1.0], torch.ones(1)), TypeError, "actual must be a torch.Tensor"),
    "shapes": (lambda: compare(_A, torch.ones(3)), ValueError, "actual (2,) vs expected (3,)"),
    "empty": (lambda: compare(torch.ones(0), torch.ones(0)), ValueError, "nothing to compare"),
    "int dtype": (lambda: compare(_A.long(), _A), TypeError, "actual has dtype torch.int64"),
    "NaN": (lambda: compare(torch.tensor([math.nan]), torch.ones(1)), ValueError, "actual holds NaN"),
    "inf": (lambda: compare(torch.ones(1), torch.tensor([math.inf])), ValueError, "expected holds NaN"),
    "sparse": (lambda: compare(_A.to_sparse(), _A), TypeError, "must be a dense tensor"),
    "meta": (lambda: compare(_A, _A.to("meta")), ValueError, "expected is on the meta device"),
    "overflow": (lambda: compare(_A.half(), torch.tensor([1.0, 1e5])), ValueError, "expected overflows"),
    "rtol alone": (lambda: compare(_A, _A, rtol=1e-3), ValueError, "give both rtol and atol"),
    "negative rtol": (lambda: compare(_A, _A, rtol=-1.0, atol=0.0), ValueError, "rtol must be at least 0"),
    "str atol": (lambda: compare(_A, _A, rtol=0.0, atol="0"), TypeError, "atol must be a real number"),
    "named: a list": (lambda: compare_named([_A], {"x": _A}), TypeError, "actual must be a mapping"),
    "named: int key": (lambda: compare_named({1: _A}, {1: _A}), TypeError, "actual must have str keys"),
    "named: no tensor": (lambda: compare_named({"x": 1.0}, {"x": _A}), TypeError, "actual['x'] must be"),
    "named: names": (lambda: compare_named({"x": _A}, {"z": _A}), NameMismatchError, "'x' only in actual"),
    "named: empty": (lambda: compare_named({}, {}), ValueError, "nothing to compare"),
    "named: shapes": (lambda: compare_named({"x": _A}, {"x": torch.ones(3)}), ValueError, "actual['x'] (2,)"),
    "named: unknown tolerance": (
        lambda: compare_named({"x": _A}, {"x": _A}, {"z": (0.0, 0.0)}), ValueError, "tolerances['z'] names no"
    ),
    "named: one tolerance": (
        lambda: compare_named({"x": _A}, {"x": _A}, {"x": (0.0,)}), ValueError, "tolerances['x'] must have 2"
    ),
    "named: negative tolerance": (
        lambda: compare_named({"x": _A}, {"x": _A}, {"x": (-1.0, 0.0)}), ValueError, "tolerances['x'][0]"
    ),
    "tolerances: no terms": (lambda: reduction_tolerances(torch.float32, 0), ValueError, "k must be"),
    "tolerances: inf scale": (
        lambda: reduction_tolerances(torch.float32, 4, scale=math.inf), ValueError, "scale must be finite"
    ),
    "tolerances: NaN safety": (
        lambda: reduction_tolerances(torch.float32, 4, safety=math.nan), ValueError, "safety must be finite"
    ),
    "tolerances: zero scale": (
        lambda: reduction_tolerances(torch.float32, 4, scale=0.0), ValueError, "scale must be positive"
    ),
    "tolerances: int dtype": (lambda: default_tolerances(torch.int32), TypeError, "no default tolerances"),
}


@pytest.mark.parametrize("case", BAD_INPUTS)
def test_bad_input_is_refused_naming_the_argument(case):
    call, error, fragment = BAD_INPUTS[case]
    with pytest.raises(error) as raised:
        call()
    assert fragment in str(raised.value)


def test_default_tolerances():
    assert default_tolerances(torch.float16) == (1e-3, 1e-5)
    assert default_tolerances(torch.bfloat16) == (1.6e-2, 1e-5)


def test_reduction_tolerances_grow_with_k_and_never_undercut_the_default():
    small, _ = reduction_tolerances(torch.float32, 1)
    assert small == default_tolerances(torch.float32)[0]
    big, atol = reduction_tolerances(torch.float32, 4096, scale=10.0)
    assert big == pytest.approx(4 * 2.0**-24 * 64) and atol == pytest.approx(10 * big)


def test_reduction_tolerances_accept_any_order_and_reject_a_real_error():
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
    a, b = torch.ones(3), torch.ones(3) * (1 + 1e-4)
    assert not compare(a, b).close and compare(a, b, rtol=1e-3, atol=0.0).close
    named = compare_named({"x": a, "y": a}, {"x": b, "y": a}, {"x": (1e-3, 0.0)})
    assert named.close and not named.bitwise_equal
    assert [row[0] for row in named.table().rows] == ["x", "y"]
    assert not compare_named({"x": a}, {"x": b}).close


def test_compare_float64_opposite_signs_reports_the_exact_ulp_distance():
    a = torch.tensor([2.0], dtype=torch.float64)
    c = compare(a, -a)
    assert c.max_ulp == 2**63 and not c.close


def test_bitwise_equal_sees_the_sign_of_zero_that_equality_does_not():
    c = compare(torch.tensor([-0.0, 1.0]), torch.tensor([0.0, 1.0]))
    assert not c.bitwise_equal and c.frac_bitwise_equal == 0.5
    assert c.max_ulp == 0 and c.close  # equal numbers: no error, but different bits
    assert compare(torch.tensor([0.0, 1.0], dtype=torch.bfloat16), torch.tensor([0.0, 1.0])).bitwise_equal
