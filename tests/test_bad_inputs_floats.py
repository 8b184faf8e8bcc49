"""Bad input to helpers.floats, helpers.widgets and helpers.tables gets a clear error (see bad_inputs.py)."""

from __future__ import annotations

import dataclasses
import math
import sys
import time
import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import floats, tables, widgets
from helpers.floats import FORMATS, INPUT_FORMATS, MATMUL_DATA, MATMUL_MAX_ELEMENTS, FloatAnatomy
from helpers.widgets import PRECISION_TABLE_MAX_K
from tests.bad_inputs import (
    ANYTHING,
    Case,
    anything_but,
    assert_clear_error,
    bad_choice,
    bad_dtype,
    bad_int,
    bad_real,
    bad_tensor,
    case_params,
    check_case,
    non_dense_tensor,
    non_finite_tensor,
    not_a_str,
    not_an_int,
    not_callable,
)

FLOAT_DTYPES = list(FORMATS)
SUM_DTYPES = [torch.float16, torch.float32, torch.float64]
KINDS = ["normal", "subnormal", "zero", "inf", "nan"]
ANATOMY = floats.float_anatomy(0.1)  # a valid FloatAnatomy, taken apart field by field below


def anatomy_fields(anatomy: FloatAnatomy = ANATOMY) -> dict:
    return {f.name: getattr(anatomy, f.name) for f in dataclasses.fields(anatomy)}


def same_float(x: object, y: float) -> bool:
    """What FloatAnatomy accepts as the same number: NaN is NaN, -0.0 is not 0.0."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return False
    x = float(x) if abs(x) < 2**1000 else math.inf
    if math.isnan(x) or math.isnan(y):
        return math.isnan(x) and math.isnan(y)
    return x == y and math.copysign(1, x) == math.copysign(1, y)


# ----------------------------------------------------------------------------- strategies


def nan_tensor(shape: tuple[int, ...] = (4,), dtype: torch.dtype = torch.float32) -> st.SearchStrategy:
    """A tensor holding at least one NaN (inf is valid for ULP distances; NaN is not)."""
    return non_finite_tensor(dtype, shape).map(lambda t: torch.where(torch.isfinite(t), t, torch.nan))


def tensors(*values: torch.Tensor) -> st.SearchStrategy:
    """Fixed tensors, drawn as fresh copies."""
    return st.sampled_from(values).map(torch.Tensor.clone)


META = torch.ones(4, device="meta")
ULP_PAIR_MEMBER = st.one_of(
    bad_tensor(FLOAT_DTYPES),
    nan_tensor(),
    tensors(
        torch.ones(3), torch.ones(2, 2), torch.ones(4, dtype=torch.float64)
    ),  # another shape, another dtype
    st.just(META),
    st.just(torch.ones(4).to_sparse()),
)
SHAPES = st.one_of(
    anything_but(list, tuple),
    st.lists(st.integers(-(2**40), -1), min_size=1, max_size=3),
    st.lists(not_an_int(), min_size=1, max_size=2),
    st.tuples(st.integers(0, 3), st.sampled_from([-1, 2.0, "2", None, True])),
    st.just((2**40, 2**40)),  # more elements than int64 counts
    st.sampled_from([(2**40,), (2**14, 2**14, 2), (2**28 + 1,)]),  # more than RANDOM_MAX_ELEMENTS
)
EXPONENT_PAIRS = st.one_of(
    anything_but(list, tuple),
    st.tuples(st.integers(-(2**40), -127), st.integers(-126, 127)),
    st.tuples(st.integers(-126, 127), st.integers(128, 2**40)),
    st.tuples(st.integers(-126, 127), st.integers(-126, 127)).filter(lambda p: p[0] > p[1]),
    st.lists(st.integers(-126, 127), max_size=4).filter(lambda p: len(p) != 2),
    st.tuples(not_an_int(), st.just(0)),
    st.tuples(st.just(0), not_an_int()),
)
def nested_of(t: torch.Tensor) -> torch.Tensor:
    """A (strided) nested tensor of t's elements, without torch's "prototype stage" warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return torch.nested.nested_tensor(list(t))


BAD_ROUNDERS = st.sampled_from(
    [lambda t: t.double(), lambda t: None, lambda t: t[:1], lambda t: t.numpy(), int, lambda t: 1 / 0, len,
     lambda t: torch.full_like(t, math.nan), lambda t: t / 0, lambda t: t.to("meta"), lambda t: t.to_sparse(),
     lambda t: nested_of(t)]
)
#: Views that claim more elements than the sums take, in no memory (sum_kahan's loop would run for minutes).
HUGE_VIEWS = st.sampled_from([(2**29,), (2**20, 2**9), (2**15, 2**14)]).map(
    lambda shape: torch.zeros(1, 1).expand(*shape) if len(shape) == 2 else torch.zeros(1).expand(*shape)
)


def bad_unit_roundoff() -> st.SearchStrategy:
    return st.one_of(bad_real(min=0, max=1), st.just(1), st.just(1.0))


VALID_TABLE_ROWS = [(1, 2.5), ("x", None)]

CASES = [
    Case(
        FloatAnatomy,
        anatomy_fields,
        {
            "dtype": bad_dtype(FLOAT_DTYPES),
            "requested": st.one_of(
                anything_but(int, float),
                st.floats().filter(lambda v: not same_float(floats.round_to_nearest(v), ANATOMY.stored)),
                st.integers(),
            ),
            "stored": st.one_of(
                anything_but(int, float),
                st.floats().filter(lambda v: not same_float(v, ANATOMY.stored)),
                st.integers(-(2**2000), 2**2000),
            ),
            "sign": st.one_of(bad_int(min=0, max=1), st.just(1)),
            "exponent_bits": st.one_of(
                not_a_str(),
                st.text(max_size=10).filter(lambda t: t != ANATOMY.exponent_bits),
                st.text("01", min_size=8, max_size=8).filter(lambda t: t != ANATOMY.exponent_bits),
            ),
            "mantissa_bits": st.one_of(
                not_a_str(),
                st.text(max_size=25).filter(lambda t: t != ANATOMY.mantissa_bits),
                st.text("01", min_size=23, max_size=23).filter(lambda t: t != ANATOMY.mantissa_bits),
            ),
            "bias": st.one_of(not_an_int(), st.integers().filter(lambda b: b != 127)),
            "kind": st.one_of(bad_choice(KINDS), st.sampled_from(["subnormal", "zero", "inf", "nan"])),
        },
    ),
    Case(
        floats.float_anatomy,
        lambda: dict(value=0.1, dtype=torch.float32),
        {
            "value": st.one_of(
                anything_but(int, float, torch.Tensor),
                st.booleans(),
                st.builds(torch.zeros, st.sampled_from([0, 2, 5])),
                tensors(torch.tensor(True), torch.tensor(1j), torch.zeros(1, device="meta")),
                st.just(torch.ones(1).to_sparse()),
                non_dense_tensor((1,)),
                st.integers(2**2048, 2**2100) | st.just(2**100000) | st.just(-(2**5000)),  # too long to print
            ),
            "dtype": bad_dtype(FLOAT_DTYPES),
        },
    ),
    Case(
        floats.round_to_nearest,
        lambda: dict(value=0.1, dtype=torch.float32),
        {
            "value": st.one_of(
                anything_but(int, float), st.sampled_from([np.float32(0.5), np.int64(3), torch.tensor(0.5)])
            ),
            "dtype": bad_dtype(FLOAT_DTYPES),
        },
    ),
    Case(
        floats.ulp,
        lambda: dict(x=torch.ones(4)),
        {"x": st.one_of(bad_tensor(FLOAT_DTYPES), non_dense_tensor())},
    ),
    Case(
        floats.ulp_distance,
        lambda: dict(a=torch.ones(4), b=torch.arange(4.0)),
        {"a": ULP_PAIR_MEMBER, "b": ULP_PAIR_MEMBER},
    ),
    Case(
        floats.max_ulp_distance,
        lambda: dict(a=torch.ones(4), b=torch.arange(4.0)),
        {"a": ULP_PAIR_MEMBER, "b": ULP_PAIR_MEMBER},
    ),
    Case(
        floats.correctly_rounded_float32,
        lambda: dict(approx=torch.ones(4, dtype=torch.float64), margin=4),
        {"approx": bad_tensor([torch.float64]), "margin": bad_int(min=0, max=2**63 - 1)},
    ),
    Case(
        floats.random_float32,
        lambda: dict(shape=(3,), exponents=(-20, 20), generator=torch.Generator().manual_seed(0)),
        {
            "shape": SHAPES,
            "exponents": EXPONENT_PAIRS,
            "generator": anything_but(type(None), torch.Generator),
        },
    ),
    Case(
        floats.two_sum,
        lambda: dict(a=torch.ones(4), b=torch.ones(4)),
        {
            "a": st.one_of(
                bad_tensor(FLOAT_DTYPES), tensors(torch.ones(3), torch.ones(2, 3), torch.ones(4).double())
            ),
            "b": st.one_of(
                bad_tensor(FLOAT_DTYPES), tensors(torch.ones(5), torch.ones(4, 2), torch.ones(4).half())
            ),
        },
    ),
    Case(
        floats.round_mantissa,
        lambda: dict(x=torch.ones(4), bits=10, ties="even"),
        {
            "x": bad_tensor([torch.float32]),
            "bits": bad_int(min=0, max=23),
            "ties": bad_choice(["even", "away"]),
        },
    ),
    Case(
        floats.round_to_format,
        lambda: dict(x=torch.ones(4), fmt="tf32"),
        {"x": bad_tensor([torch.float32]), "fmt": bad_choice(list(INPUT_FORMATS))},
    ),
    Case(
        floats.unit_roundoff,
        lambda: dict(fmt="float16"),
        {"fmt": bad_choice([*INPUT_FORMATS, "float64"])},
    ),
    Case(
        floats.tf32_linear,
        lambda: dict(x=torch.ones(3, 4), weight=torch.ones(2, 4), bias=torch.ones(2)),
        {
            "x": st.one_of(
                bad_tensor([torch.float32]), tensors(torch.ones(3, 5), torch.tensor(1.0), torch.ones(4, 3))
            ),
            "weight": st.one_of(
                bad_tensor([torch.float32]), tensors(torch.ones(4), torch.ones(2, 5), torch.ones(1, 2, 4))
            ),
            "bias": st.one_of(
                anything_but(torch.Tensor, type(None)),
                st.sampled_from([torch.float64, torch.float16, torch.int64]).map(
                    lambda d: torch.ones(2, dtype=d)
                ),
                tensors(torch.ones(3), torch.ones(2, 1), torch.tensor(1.0)),
            ),
        },
    ),
    Case(
        floats.matmul_error,
        lambda: dict(fmt="tf32", k=64, m=8, seed=0, data="normal"),
        {
            "fmt": st.one_of(
                not_callable().filter(lambda v: not (isinstance(v, str) and v in INPUT_FORMATS)),
                st.text(max_size=10).filter(lambda t: t not in INPUT_FORMATS),
                BAD_ROUNDERS,
            ),
            "k": st.one_of(bad_int(min=1), st.integers(MATMUL_MAX_ELEMENTS // 8 + 1, 2**70)),
            "m": st.one_of(
                bad_int(min=1),
                st.integers(MATMUL_MAX_ELEMENTS // 64 + 1, 2**70),
                st.integers(2**13 + 1, 2**17),  # m * m above MATMUL_MAX_OUTPUT
                tensors(torch.tensor(8, device="meta")),
            ),
            "seed": bad_int(min=-(2**63), max=2**64 - 1),
            "data": bad_choice(list(MATMUL_DATA)),
        },
    ),
    Case(
        floats.gamma,
        lambda: dict(k=10, u=2.0**-24),
        {"k": bad_int(min=0, max=2**63 - 1), "u": bad_unit_roundoff()},
    ),
    Case(
        floats.matmul_error_bound,
        lambda: dict(a=torch.ones(3, 4), b=torch.ones(4, 2), u_in=2.0**-11, u_acc=2.0**-24),
        {
            "a": st.one_of(
                bad_tensor(),
                non_finite_tensor(torch.float32, (3, 4)),
                tensors(torch.ones(3, 4, dtype=torch.complex64), torch.ones(3, 4, dtype=torch.bool)),
                tensors(
                    torch.ones(3, 5), torch.tensor(1.0), torch.ones(2, 3, 5), torch.ones(3, 4, device="meta")
                ),
            ),
            "b": st.one_of(
                bad_tensor(),
                non_finite_tensor(torch.float64, (4, 2)),
                tensors(
                    torch.ones(4, 2, dtype=torch.complex128),
                    torch.ones(5, 2),
                    torch.tensor(1.0),
                    torch.ones(2, 4),
                ),
            ),
            "u_in": bad_unit_roundoff(),
            "u_acc": st.one_of(bad_unit_roundoff(), st.floats(0.25, 1.0)),  # k = 4: k * u_acc >= 1
        },
    ),
    *[
        Case(
            fn,
            lambda: dict(x=torch.ones(2, 3)),
            {
                "x": st.one_of(
                    bad_tensor(SUM_DTYPES, finite=fn is floats.sum_exact),
                    tensors(torch.ones(0), torch.tensor(1.0), torch.ones(3, 0), torch.ones(3, device="meta")),
                    non_dense_tensor((2, 3)),
                    HUGE_VIEWS,
                )
            },
        )
        for fn in (floats.sum_sequential, floats.sum_pairwise, floats.sum_kahan, floats.sum_exact)
    ],
    Case(
        widgets.float_explorer,
        lambda: dict(value=0.5, dtype=torch.float32),
        {
            "value": st.one_of(anything_but(int, float), st.just(10**400), st.just(np.complex64(1))),
            "dtype": bad_dtype(FLOAT_DTYPES),
        },
    ),
    Case(
        widgets.precision_table,
        lambda: dict(fmt="float32", k=64),
        {
            "fmt": bad_choice(list(INPUT_FORMATS)),
            "k": st.one_of(bad_int(min=1), st.integers(PRECISION_TABLE_MAX_K + 1, 2**70)),
        },
    ),
    Case(
        widgets.tolerance_playground,
        lambda: dict(log10_rtol=-5.0, log10_atol=-5.0, log2_k=4),
        {
            "log10_rtol": bad_real(min=-8.0, max=-1.0),
            "log10_atol": bad_real(min=-9.0, max=0.0),
            "log2_k": bad_int(min=2, max=14),
        },
    ),
    Case(
        tables.Table,
        lambda: dict(headers=["a", "b"], rows=list(VALID_TABLE_ROWS), title="T"),
        {
            "headers": st.one_of(
                anything_but(list, tuple),
                st.just([]),
                st.lists(anything_but(str), min_size=2, max_size=2),
                st.tuples(st.just("a"), anything_but(str)),
            ),
            "rows": st.one_of(
                anything_but(list, tuple),
                st.lists(anything_but(list, tuple), min_size=1, max_size=3),
                st.lists(
                    st.lists(st.integers(), max_size=5).filter(lambda r: len(r) != 2), min_size=1, max_size=3
                ),
                st.tuples(st.just((1, 2)), st.text(min_size=2, max_size=2)),  # a str is not a row
            ),
            "title": anything_but(str),
        },
    ),
]


# ----------------------------------------------------------------------------- the property tests


def test_valid_calls_work():
    """Each Case's valid call succeeds, so that the bad-input tests prove something."""
    pytest.importorskip("ipywidgets")
    for case in CASES:
        case.fn(**case.valid())
    assert FloatAnatomy(**anatomy_fields()) == ANATOMY
    assert str(ANATOMY.table()) == str(ANATOMY)
    assert tables.Table(**CASES[-1].valid()).cells() == [["1", "2.5"], ["x", "None"]]


@pytest.mark.parametrize("case, param", case_params(CASES))
@given(data=st.data())
@settings(max_examples=40, deadline=None)
def test_bad_input_gets_a_clear_error(case, param, data):
    check_case(case, param, data)


# ----------------------------------------------------------------------------- FloatAnatomy


@given(st.floats() | st.integers(-(2**130), 2**130), st.sampled_from(FLOAT_DTYPES))
@settings(max_examples=100, deadline=None)
def test_every_anatomy_float_anatomy_makes_passes_the_constructor_checks(value, dtype):
    anatomy = floats.float_anatomy(value, dtype)
    assert FloatAnatomy(**anatomy_fields(anatomy)) == anatomy


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
def test_anatomy_fields_of_another_supported_dtype_name_the_dtype(dtype):
    fields = anatomy_fields() | {"dtype": dtype}  # float32's bits under another format's name
    error = assert_clear_error(lambda: FloatAnatomy(**fields), "dtype")
    assert isinstance(error, ValueError) and "_bits must be" in str(error)


def test_anatomy_field_errors_name_the_field():
    cases = {
        "sign": ({"sign": 1}, ValueError),
        "kind": ({"kind": "zero"}, ValueError),
        "requested": ({"requested": 0.2}, ValueError),
        "stored": ({"stored": 0.1}, ValueError),  # 0.1 itself is not a float32 value
        "bias": ({"bias": 15}, ValueError),
        "mantissa_bits": ({"mantissa_bits": "1" * 22 + "2"}, ValueError),
    }
    for name, (change, error_type) in cases.items():
        error = assert_clear_error(lambda change=change: FloatAnatomy(**anatomy_fields() | change), name)
        assert isinstance(error, error_type), (name, error)
    assert isinstance(
        assert_clear_error(lambda: FloatAnatomy(**anatomy_fields() | {"sign": 0.0}), "sign"), TypeError
    )


# ----------------------------------------------------------------------------- floats: targeted cases


def test_existing_messages_are_kept():
    # tests/test_floats.py and the notebooks match these words
    with pytest.raises(TypeError, match="not supported"):
        floats.ulp(torch.ones(2, dtype=torch.int64))
    with pytest.raises(TypeError, match="one dtype"):
        floats.ulp_distance(torch.ones(2), torch.ones(2, dtype=torch.float64))
    with pytest.raises(ValueError, match="between 0 and 23"):
        floats.round_mantissa(torch.ones(2), 24)
    with pytest.raises(ValueError, match="unknown format"):
        floats.round_to_format(torch.ones(2), "fp8")
    with pytest.raises(ValueError, match="unknown format"):
        widgets.precision_table("float8", 16)
    with pytest.raises(ValueError, match="positive"):
        floats.matmul_error("tf32", 0)
    with pytest.raises(ValueError, match="nothing to sum"):
        floats.sum_kahan(torch.ones(0))
    with pytest.raises(ValueError, match=r"row 1"):
        tables.Table(["a", "b"], [(1, 2), (1,)])
    with pytest.raises(ValueError, match="header"):
        tables.Table([], [])
    with pytest.raises(ValueError) as info:  # printed in lesson 03's stored output: word for word
        floats.gamma(4096, 2.0**-11)
    assert str(info.value) == (
        "gamma_k is only defined for k * u < 1, got k = 4096, u = 0.000488 (k * u = 2); "
        "the unit roundoff of rounded inputs belongs in u_in, not in the accumulation's gamma_k"
    )


@given(st.integers(1, 2**63 - 1), st.floats(0, 1, exclude_max=True))
def test_gamma_refuses_k_u_of_one_or_more_and_is_finite_below(k, u):
    if k * u >= 1:
        error = assert_clear_error(lambda: floats.gamma(k, u), "k * u < 1")
        assert isinstance(error, ValueError)
    else:
        assert 0 <= floats.gamma(k, u) < math.inf


def test_nested_arguments_name_the_part_that_is_wrong():
    assert "exponents[1]" in str(
        assert_clear_error(lambda: floats.random_float32((2,), (0, 200)), "exponents")
    )
    assert "exponents[0]" in str(
        assert_clear_error(lambda: floats.random_float32((2,), ("0", 2)), "exponents")
    )
    assert "shape[1]" in str(assert_clear_error(lambda: floats.random_float32((2, -1)), "shape"))
    assert "rows[2]" in str(assert_clear_error(lambda: tables.Table(["a"], [[1], [2], [3, 4]]), "rows"))
    assert "rows[0]" in str(assert_clear_error(lambda: tables.Table(["a"], ["x"]), "rows"))
    assert "headers[1]" in str(assert_clear_error(lambda: tables.Table(["a", 2], [["x", "y"]]), "headers"))


def test_a_list_shape_still_works():
    g = lambda: torch.Generator().manual_seed(0)  # noqa: E731
    assert torch.equal(
        floats.random_float32([2, 3], generator=g()), floats.random_float32((2, 3), generator=g())
    )


def test_the_autograd_function_checks_its_arguments_too():
    assert_clear_error(lambda: floats.TF32LinearFunction.apply(torch.ones(3), torch.ones(2, 4), None), "x")
    assert_clear_error(
        lambda: floats.TF32LinearFunction.apply(torch.ones(3, 4), torch.ones(2, 4).double(), None), "weight"
    )


def test_matmul_error_cancelling_data_needs_k_above_m():
    error = assert_clear_error(lambda: floats.matmul_error("tf32", 8, m=8, data="cancelling"), "k > m")
    assert isinstance(error, ValueError)


def test_a_rounding_function_that_fails_is_named():
    error = assert_clear_error(lambda: floats.matmul_error(lambda t: t.reshape(3), 8, m=8), "fmt")
    assert "RuntimeError" in str(error) and isinstance(error.__cause__, RuntimeError)


def test_bad_arguments_are_refused_before_any_data_is_drawn(monkeypatch):
    def drawn(*args, **kwargs):
        raise AssertionError("data drawn before the arguments were checked")

    for name in ("randn", "rand", "randint"):
        monkeypatch.setattr(torch, name, drawn)
    for kwargs, param in [
        ({"fmt": "fp8", "k": 64}, "fmt"),
        ({"fmt": "tf32", "k": 2**40}, "k"),
        ({"fmt": "tf32", "k": 64, "seed": 2**64}, "seed"),
        ({"fmt": "tf32", "k": 64, "data": "uniform"}, "data"),
    ]:
        assert_clear_error(lambda kwargs=kwargs: floats.matmul_error(**kwargs), param)
    assert_clear_error(lambda: widgets.precision_table("tf32", 0), "k")
    assert_clear_error(lambda: floats.random_float32((2,), (5, 4)), "exponents")


def test_widgets_check_before_importing_ipywidgets(monkeypatch):
    monkeypatch.setitem(sys.modules, "ipywidgets", None)  # importing it now raises ImportError
    assert_clear_error(lambda: widgets.float_explorer("0.5"), "value")
    assert_clear_error(lambda: widgets.float_explorer(0.5, torch.int8), "dtype")
    assert_clear_error(lambda: widgets.tolerance_playground(-5.0, -5.0, 15), "log2_k")
    assert_clear_error(lambda: widgets.tolerance_playground(None), "log10_rtol")
    assert_clear_error(lambda: widgets.reproducibility_checklist(torch_seed=1), "torch_seed")


def test_bad_input_tests_are_fast():
    start = time.perf_counter()
    for _ in range(20):
        for call in (
            lambda: floats.matmul_error("tf32", 2**27),
            lambda: widgets.precision_table("bfloat16", -1),
            lambda: floats.matmul_error_bound(torch.ones(2, 3), torch.ones(3, 2), 0.0, 0.5),
        ):
            with pytest.raises((TypeError, ValueError)):
                call()
    assert time.perf_counter() - start < 1.0


# ----------------------------------------------------------------------------- format_value takes anything


class _Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("no str")

    def __repr__(self) -> str:
        raise RuntimeError("no repr")


class _ReprOnly:
    def __str__(self) -> str:
        raise RuntimeError("no str")

    def __repr__(self) -> str:
        return "ReprOnly()"


@given(ANYTHING)
@settings(max_examples=100, deadline=None)
def test_format_value_formats_any_value(value):
    text = tables.format_value(value)
    assert isinstance(text, str)
    if isinstance(value, float) and math.isfinite(value) and value != 0:
        assert text == (f"{value:.6g}" if 1e-3 <= abs(value) < 1e6 else f"{value:.3e}")
    elif not isinstance(value, float):
        assert text == str(value)  # every other leaf passes through str()


def test_format_value_survives_objects_that_cannot_be_printed():
    assert tables.format_value(_ReprOnly()) == "ReprOnly()"
    assert tables.format_value(_Unprintable()) == "<_Unprintable>"
    table = tables.Table(["odd"], [(_Unprintable(),), (float("nan"),), (torch.ones(2),)])
    assert table.cells() == [["<_Unprintable>"], ["nan"], [str(torch.ones(2))]]
    assert "<_Unprintable>" in str(table) and "&lt;_Unprintable&gt;" in table._repr_html_()


def test_matmul_error_bound_keeps_its_signature_and_printed_source():
    # lesson 03 prints its source (inspect.getsource follows __wrapped__): the checks run in a wrapper
    import inspect

    assert list(inspect.signature(floats.matmul_error_bound).parameters) == ["a", "b", "u_in", "u_acc"]
    assert "_check_bound_arguments" not in inspect.getsource(floats.matmul_error_bound)
    a, b = torch.ones(2, 3), torch.ones(3, 2)
    assert torch.equal(
        floats.matmul_error_bound(b=b, a=a, u_acc=2.0**-24, u_in=0),
        floats.matmul_error_bound(a, b, 0, 2.0**-24),
    )


# ----------------------------------------------------------------------------- fixes after the audit


def test_matmul_error_caps_every_allocation_and_the_work():
    for kwargs in [dict(k=1, m=2**16), dict(k=1, m=2**13 + 1), dict(k=2**21, m=2**8 + 1)]:
        assert_clear_error(lambda kwargs=kwargs: floats.matmul_error("float32", **kwargs), "m")
    assert floats.MATMUL_MAX_OUTPUT == 2**26 and floats.MATMUL_MAX_PRODUCTS == 2**37
    assert "precision_table" in str(assert_clear_error(lambda: widgets.precision_table("tf32", 2**22), "k"))
    assert widgets.precision_table("tf32", 64).rows  # small k still works


@pytest.mark.parametrize(
    "rounder, kind",
    [
        (lambda t: torch.full_like(t, math.nan), ValueError),
        (lambda t: t * math.inf, ValueError),
        (lambda t: t.to("meta"), TypeError),
        (lambda t: t.to_sparse(), TypeError),
    ],
)
def test_matmul_error_checks_what_fmt_returns(rounder, kind):
    error = assert_clear_error(lambda: floats.matmul_error(rounder, 4, m=2), "fmt")
    assert isinstance(error, kind)


def test_random_float32_caps_the_number_of_elements():
    message = str(assert_clear_error(lambda: floats.random_float32((2**40,)), "shape"))
    assert "RANDOM_MAX_ELEMENTS" in message and floats.RANDOM_MAX_ELEMENTS == 2**28


@pytest.mark.parametrize(
    "fn, shape",
    [
        (floats.sum_kahan, (2**27,)),  # a Python loop of 2**27 steps: minutes
        (floats.sum_kahan, (2**24 + 1,)),
        (floats.sum_exact, (2**26,)),  # 2**26 Python floats
        (floats.sum_sequential, (2**31,)),
        (floats.sum_pairwise, (2**20, 2**9)),
    ],
)
def test_the_sums_refuse_sizes_they_cannot_handle_quickly(fn, shape):
    x = torch.zeros(1).expand(*shape) if len(shape) == 1 else torch.zeros(1, 1).expand(*shape)
    start = time.perf_counter()
    assert_clear_error(lambda: fn(x), "x")
    assert time.perf_counter() - start < 1.0


def test_sum_exact_overflow_is_both_an_overflow_and_a_value_error():
    for x, where in [
        (torch.tensor([1e308, 1e308], dtype=torch.float64), "of x is"),
        (torch.tensor([[1.0, 2.0], [1e308, 1e308]], dtype=torch.float64), "x's row 1"),
    ]:
        error = assert_clear_error(lambda x=x: floats.sum_exact(x), "x")
        assert isinstance(error, OverflowError) and isinstance(error, floats.SumOverflowError)
        assert where in str(error)
    # the exact sum is representable: still computed through the rational fallback
    assert floats.sum_exact(torch.tensor([1e308, 1e308, -1e308], dtype=torch.float64)).item() == 1e308


def test_float_anatomy_refuses_ints_too_long_to_print():
    for value in (2**100000, -(2**2048)):
        error = assert_clear_error(lambda value=value: floats.float_anatomy(value), "value")
        assert "2048 bits" in str(error)
    assert "requested" in str(
        assert_clear_error(
            lambda: dataclasses.replace(floats.float_anatomy(math.inf), requested=2**100000), "requested"
        )
    )
    assert floats.ANATOMY_MAX_INT_BITS == 2048
    for value in (2**2048 - 1, 10**400, 2**200):  # beyond float64 or float32: inf, and printable
        anatomy = floats.float_anatomy(value)
        assert anatomy.stored == math.inf and "inf" in str(anatomy)
    assert floats.float_anatomy(2**1023, torch.float64).stored == 2.0**1023


def test_check_int_and_check_real_refuse_meta_scalars():
    from helpers import _validate

    meta_int, meta_real = torch.tensor(3, device="meta"), torch.tensor(0.5, device="meta")
    assert isinstance(assert_clear_error(lambda: _validate.check_int(meta_int, "k"), "k"), TypeError)
    assert isinstance(assert_clear_error(lambda: _validate.check_real(meta_real, "u"), "u"), TypeError)
    assert isinstance(assert_clear_error(lambda: floats.gamma(meta_int, 0.1), "k"), TypeError)
    assert _validate.check_int(torch.tensor(3), "k") == 3 and _validate.check_real(torch.tensor(0.5), "u") == 0.5


@given(non_dense_tensor((2, 3)))
@settings(max_examples=10, deadline=None)
def test_check_tensor_refuses_non_dense_tensors_unless_asked(value):
    from helpers import _validate

    assert isinstance(assert_clear_error(lambda: _validate.check_tensor(value, "x"), "x"), TypeError)
    assert _validate.check_tensor(value, "x", dense=False) is value


class _FsPath:
    def __init__(self, result: object) -> None:
        self.result = result

    def __fspath__(self):
        if isinstance(self.result, BaseException):
            raise self.result
        return self.result


def test_check_path_refuses_pathlikes_that_do_not_give_a_str():
    from pathlib import Path

    from helpers import _validate

    for result in (b"/tmp/x", 3, None, RuntimeError("broken")):
        error = assert_clear_error(lambda result=result: _validate.check_path(_FsPath(result), "path"), "path")
        assert isinstance(error, TypeError)
    assert _validate.check_path(_FsPath("/tmp/x"), "path") == Path("/tmp/x")


def test_checked_first_reports_a_wrong_call_from_the_helpers():
    a, b = torch.ones(2, 3), torch.ones(3, 2)
    for call in (
        lambda: floats.matmul_error_bound(a, b, 0),  # missing u_acc
        lambda: floats.matmul_error_bound(a, b, 0, 0, 3),  # one too many
        lambda: floats.matmul_error_bound(a, b, u_in=0, u_acc=0, u_ac=0),  # unknown keyword
    ):
        error = assert_clear_error(call, "matmul_error_bound()")
        assert isinstance(error, TypeError) and error.__cause__ is None
