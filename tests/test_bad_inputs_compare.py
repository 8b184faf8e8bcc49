"""Bad input for helpers.compare, helpers.bench and helpers.plots gets a clear error, early.

Each public name is a ``Case`` (see ``tests/bad_inputs.py``): a call that works, and for each
parameter a strategy of bad values, each of which must be refused with a TypeError or ValueError,
raised by the helpers, naming the parameter. On top of the rule:

* timing helpers run with a fake ``torch.utils.benchmark.Timer`` that records being created, and
  a bad argument must be refused before any Timer exists (or any ``make_call`` is made);
* plotting helpers must refuse a bad argument before creating a figure;
* nested structures (tolerance maps, named tensors, series) name the path to the bad part, such
  as ``tolerances['fc.weight'][0]``.
"""

from __future__ import annotations

import math
from types import SimpleNamespace
from unittest import mock

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
import torch.utils.benchmark  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from helpers import bench, diagrams, plots  # noqa: E402
from helpers.compare import (  # noqa: E402
    Comparison,
    NamedComparison,
    NameMismatchError,
    compare,
    compare_named,
    default_tolerances,
    reduction_tolerances,
)
from tests.bad_inputs import (  # noqa: E402
    Case,
    anything_but,
    assert_clear_error,
    bad_dtype,
    bad_int,
    bad_real,
    bad_tensor,
    case_params,
    check_case,
    malformed,
    not_a_str,
    not_callable,
)

FLOATS = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
EXAMPLES = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]
)


def named(fn, qualname: str):
    """``fn`` under a readable name for test ids and hypothesis reports."""
    fn.__qualname__ = qualname
    return fn


# ----------------------------------------------------------------------------- junk for nested structures

#: Values that are wrong anywhere in a tolerance map, a series of measurements or a pair of
#: series: not numbers at all, or numbers that are negative, NaN or infinite, or tensors that
#: hold NaN or have two dimensions. (``malformed``'s default junk includes valid numbers.)
NEVER_VALID = st.one_of(
    st.none(),
    st.booleans(),
    st.floats(max_value=-1e-300, allow_nan=False, allow_infinity=False),
    st.sampled_from([math.nan, math.inf, -math.inf]),
    st.integers(max_value=-1),
    st.text(max_size=5),
    st.lists(st.none(), max_size=2),
    st.dictionaries(st.text(max_size=2), st.none(), max_size=1),
    st.just(torch.tensor([math.nan])),
    st.just(torch.ones(1, 1)),
)


def not_a_mapping(*also_valid: type) -> st.SearchStrategy:
    return anything_but(dict, *also_valid)


# ----------------------------------------------------------------------------- helpers.compare


def _tensors() -> tuple[torch.Tensor, torch.Tensor]:
    a = torch.linspace(1.0, 2.0, 4)
    return a, a * (1 + 1e-7)


def _comparison() -> Comparison:
    return compare(*_tensors())


def _comparison_fields() -> dict:
    return dict(
        dtype=torch.float32, numel=4, max_abs_error=0.0, max_rel_error=0.0, max_ulp=0,
        frac_bitwise_equal=1.0, rtol=1.3e-6, atol=1e-5, close=True,
    )


def _named_tensors(scale: float = 1.0) -> dict[str, torch.Tensor]:
    return {"fc.weight": torch.linspace(1.0, 2.0, 6).reshape(2, 3) * scale, "fc.bias": torch.ones(2) * scale}


def _tolerances() -> dict[str, tuple[float, float]]:
    return {"fc.weight": (1e-3, 1e-5), "fc.bias": (1e-3, 0.0)}


def _a_valid_tolerance_map(t: object) -> bool:
    """Deleting a whole entry leaves a valid map (that name then gets the defaults)."""
    full = _tolerances()
    return isinstance(t, dict) and set(t) < set(full) and all(t[k] == full[k] for k in t)


def bad_compared_tensor() -> st.SearchStrategy:
    """Not a tensor, a non-float dtype, NaN/inf, empty, or a shape other than (4,), broadcastable or not."""
    return st.one_of(
        bad_tensor(FLOATS, finite=True, shape=(4,)),
        st.sampled_from([(3,), (4, 1), (1, 4), (2, 2), (), (0,)]).map(torch.ones),
        st.just(torch.ones(4, device="meta")),
    )


comparison_table = named(lambda title: _comparison().table(title), "Comparison.table")
named_comparison_table = named(
    lambda title: NamedComparison({"w": _comparison()}).table(title), "NamedComparison.table"
)

COMPARE_CASES = [
    Case(default_tolerances, lambda: dict(dtype=torch.float32), {"dtype": bad_dtype(FLOATS)}),
    Case(
        compare,
        lambda: dict(zip(("actual", "expected"), _tensors(), strict=True), rtol=1e-3, atol=1e-5),
        {
            "actual": bad_compared_tensor(),
            "expected": bad_compared_tensor(),
            "rtol": bad_real(min=0.0),
            "atol": bad_real(min=0.0),
        },
    ),
    Case(
        Comparison,
        _comparison_fields,
        {
            "dtype": bad_dtype(FLOATS),
            "numel": st.one_of(bad_int(min=1, max=2**63 - 1), st.just(2**100000)),
            "max_abs_error": st.one_of(bad_real(min=0.0, finite=False), st.just(math.inf)),  # inf: close=True
            "max_rel_error": bad_real(min=0.0, finite=False),
            "max_ulp": st.one_of(bad_int(min=0, max=2**64), st.just(2**100000)),
            "frac_bitwise_equal": bad_real(min=0.0, max=1.0),
            "rtol": bad_real(min=0.0),
            "atol": bad_real(min=0.0),
            "close": anything_but(bool),
        },
    ),
    Case(comparison_table, lambda: dict(title="t"), {"title": not_a_str()}),
    Case(
        reduction_tolerances,
        lambda: dict(dtype=torch.float32, k=64, scale=2.0, safety=4.0),
        {
            "dtype": bad_dtype(FLOATS),
            "k": st.one_of(bad_int(min=1, max=2**53), st.just(10**400), st.just(10**5000)),
            "scale": bad_real(positive=True),
            "safety": bad_real(positive=True),
        },
    ),
    Case(
        NamedComparison,
        lambda: dict(comparisons={"w": _comparison()}),
        {
            "comparisons": st.one_of(
                not_a_mapping(),
                st.just({}),
                st.builds(lambda v: {"w": v}, anything_but(Comparison)),
                st.just({1: _comparison()}),
            )
        },
    ),
    Case(named_comparison_table, lambda: dict(title="t"), {"title": not_a_str()}),
    Case(
        compare_named,
        lambda: dict(actual=_named_tensors(), expected=_named_tensors(1 + 1e-7), tolerances=_tolerances()),
        {
            "actual": st.one_of(not_a_mapping(), malformed(_named_tensors)),
            "expected": st.one_of(not_a_mapping(), malformed(_named_tensors)),
            "tolerances": st.one_of(
                not_a_mapping(type(None)),
                malformed(_tolerances, junk=NEVER_VALID).filter(lambda t: not _a_valid_tolerance_map(t)),
            ),
        },
    ),
]


# ----------------------------------------------------------------------------- helpers.bench


class FakeTimer:
    """Stands in for ``torch.utils.benchmark.Timer``: records its creation, measures nothing."""

    created: list[dict] = []

    def __init__(self, *args, **kwargs) -> None:
        FakeTimer.created.append(kwargs)

    def blocked_autorange(self, min_run_time: float = 0.2) -> SimpleNamespace:
        return SimpleNamespace(median=1e-3, iqr=1e-5, times=[1e-3] * 3)


MADE: list[int] = []  # the sizes the valid make_call was asked for


def _make_call(n: int):
    MADE.append(n)
    return lambda: None


def untimed(fn):
    """``fn`` with the fake Timer in place of the real one, for the duration of each call."""

    def call(**kwargs):
        with mock.patch.object(torch.utils.benchmark, "Timer", FakeTimer):
            return fn(**kwargs)

    return named(call, fn.__qualname__)


def _sweep_point() -> bench.SweepPoint:
    return bench.SweepPoint(1, bench.Timing(1e-3, 1e-5, 3), 1e6)


def bad_sizes() -> st.SearchStrategy:
    """Not a list or tuple, empty, or a list with one size that is not a positive int."""
    return st.one_of(
        anything_but(list, tuple),
        st.sampled_from([[], ()]),
        st.tuples(st.lists(st.integers(1, 64), max_size=2), bad_int(min=1)).map(lambda p: [*p[0], p[1]]),
    )


def bad_work() -> st.SearchStrategy:
    """Not callable, or a function whose counts are not non-negative finite numbers."""
    counts = [-1.0, math.nan, math.inf, "1e9", None, torch.ones(2), 1j]
    return st.one_of(not_callable(), st.sampled_from(counts).map(lambda c: lambda n: c))


TIMED_CASES = [
    Case(
        untimed(bench.time_call),
        lambda: dict(fn=lambda: None, min_run_time=0.01, threads=1),
        {
            "fn": not_callable(),
            "min_run_time": st.one_of(bad_real(positive=True), st.floats(600.5, 1e300)),
            "threads": st.one_of(bad_int(min=1, max=2**15), st.just(2**31)).filter(lambda v: v is not None),
        },
    ),
    Case(
        untimed(bench.sweep),
        lambda: dict(make_call=_make_call, sizes=[1, 2], work=lambda n: 2.0 * n, min_run_time=0.01,
                     progress_after=60.0),
        {
            "make_call": st.one_of(not_callable(), st.just(lambda n: 3)),
            "sizes": bad_sizes(),
            "work": bad_work(),
            "min_run_time": st.one_of(bad_real(positive=True), st.floats(600.5, 1e300)),
            "progress_after": bad_real(min=0.0),
        },
    ),
]

#: Durations so short that about a billion FLOPs or bytes in them is an infinite rate.
TOO_FEW_SECONDS = st.sampled_from([5e-324, 1e-310, 1e-305])

BENCH_CASES = [
    Case(
        bench.Timing,
        lambda: dict(median=1e-3, iqr=1e-5, runs=10),
        {"median": bad_real(min=0.0), "iqr": bad_real(min=0.0), "runs": bad_int(min=1)},
    ),
    Case(
        bench.gflop_per_s,
        lambda: dict(flops=2e9, seconds=0.5),
        {"flops": bad_real(min=0.0), "seconds": st.one_of(bad_real(positive=True), TOO_FEW_SECONDS)},
    ),
    Case(
        bench.gb_per_s,
        lambda: dict(nbytes=1e9, seconds=2.0),
        {"nbytes": bad_real(min=0.0), "seconds": st.one_of(bad_real(positive=True), TOO_FEW_SECONDS)},
    ),
    Case(
        bench.SweepPoint,
        lambda: dict(size=16, timing=bench.Timing(1e-3, 0.0, 3), work=1e6),
        {
            "size": bad_int(min=1),
            "timing": st.one_of(anything_but(bench.Timing), st.just(bench.Timing(0.0, 0.0, 1))),
            "work": bad_real(min=0.0),
        },
    ),
    Case(
        bench.sweep_table,
        lambda: dict(points=[_sweep_point()], unit="GB/s", title="t"),
        {
            "points": st.one_of(
                anything_but(list, tuple), st.lists(anything_but(bench.SweepPoint), min_size=1)
            ),
            "unit": not_a_str(),
            "title": not_a_str(),
        },
    ),
]


# ----------------------------------------------------------------------------- helpers.plots


def _errors() -> dict:
    return {"sequential": [1e-8, 2e-8]}


def _bounds() -> dict:
    return {"sequential bound": [1e-7, 3e-7]}


def _series() -> dict:
    return {"CPU (live)": ([1, 2], [3.0, 4.0])}


def _points() -> dict:
    return {"op": (0.1, 1.0)}


def _divergence():
    from helpers.diagnose import first_divergence

    model = torch.nn.Linear(3, 2)
    return first_divergence(model, model, torch.ones(1, 3))


def _runs() -> dict:
    return {"default": torch.tensor([1.0, 3.0, 2.0])}


def bad_real_tensor(shape: tuple[int, ...]) -> st.SearchStrategy:
    """Not a tensor, NaN/inf, empty, bool or complex."""
    return st.one_of(
        bad_tensor(finite=True, shape=shape),
        st.sampled_from(
            [torch.ones(0), torch.zeros(shape, dtype=torch.bool), torch.zeros(shape, dtype=torch.complex64)]
        ),
    )


#: Mathtext matplotlib cannot parse: it would fail only when the figure is laid out.
BAD_MATHTEXT = ["$\\frac$", "$x^$", "$\\undefinedcmd$", "$\\bad{$", "$^^$", "a $\\nope$ b"]


def bad_text() -> st.SearchStrategy:
    """Not a str, or a str holding mathtext that does not parse."""
    return st.one_of(not_a_str(), st.sampled_from(BAD_MATHTEXT))


def bad_ns() -> st.SearchStrategy:
    """Not a list, empty, a size that is not a positive number, or not one size per value (2)."""
    return st.one_of(
        anything_but(list, tuple, torch.Tensor),
        st.sampled_from([[], [2], [2, 4, 8], torch.tensor([2.0, math.nan]), torch.ones(2, 1)]),
        st.tuples(st.integers(1, 8), bad_real(positive=True)).map(list),
    )


def non_empty(strategy: st.SearchStrategy) -> st.SearchStrategy:
    """``malformed`` can delete the only entry, leaving ``{}``: valid where the map may be empty."""
    return strategy.filter(lambda v: v != {})


PLOT_CASES = [
    Case(
        plots.plot_sum_spread,
        lambda: dict(sums=torch.tensor([1.0, 1.0, 3.0]), exact=2.0, unit=1.0, title="t", unit_name="ULPs"),
        {
            "sums": bad_real_tensor((4,)),
            "exact": bad_real(),
            "unit": st.one_of(bad_real(positive=True), st.just(1e-320)),
            "title": bad_text(),
            "unit_name": bad_text(),
        },
    ),
    Case(
        plots.plot_error_growth,
        lambda: dict(ns=[2, 4], errors=_errors(), bounds=_bounds(), ylabel="y", xlabel="x"),
        {
            "ns": bad_ns(),
            "errors": st.one_of(not_a_mapping(), malformed(_errors, junk=NEVER_VALID)),
            "bounds": st.one_of(not_a_mapping(type(None)), non_empty(malformed(_bounds, junk=NEVER_VALID))),
            "ylabel": bad_text(),
            "xlabel": bad_text(),
        },
    ),
    Case(
        plots.plot_sweeps,
        lambda: dict(series=_series(), xlabel="n", ylabel="GFLOP/s", title="t"),
        {
            "series": st.one_of(not_a_mapping(), malformed(_series, junk=NEVER_VALID)),
            "xlabel": bad_text(),
            "ylabel": bad_text(),
            "title": bad_text(),
        },
    ),
    Case(
        plots.plot_roofline,
        lambda: dict(points=_points(), peak_gflops=100.0, peak_gbps=10.0, title="t"),
        {
            "points": st.one_of(not_a_mapping(), non_empty(malformed(_points, junk=NEVER_VALID))),
            "peak_gflops": bad_real(positive=True),
            "peak_gbps": bad_real(positive=True),
            "title": bad_text(),
        },
    ),
    Case(
        plots.plot_accumulators,
        lambda: dict(dtypes=[torch.float16], steps=16, value=1.0, title="t"),
        {
            "dtypes": st.one_of(anything_but(list, tuple), st.just([]), bad_dtype(FLOATS).map(lambda d: [d])),
            "steps": bad_int(min=1, max=plots.MAX_ACCUMULATOR_STEPS),
            "value": bad_real(positive=True),
            "title": bad_text(),
        },
    ),
    Case(
        plots.plot_number_line,
        lambda: dict(power=1.0, dtype=torch.bfloat16, count=4, title="t"),
        {
            "power": st.one_of(bad_real(positive=True), st.sampled_from([3.0, 0.75, 2.0**-140, 2.0**127])),
            "dtype": bad_dtype(FLOATS),
            "count": bad_int(min=1, max=64),
            "title": bad_text(),
        },
    ),
    Case(
        plots.plot_ulp_differences,
        lambda: dict(a=torch.ones(3), b=torch.ones(3), labels=("x", "y"), title="t"),
        {
            "a": st.one_of(bad_tensor(FLOATS, shape=(3,)), st.just(torch.ones(3, dtype=torch.float64)), st.just(torch.ones(2))),
            "labels": st.one_of(anything_but(list, tuple), st.just(("x",)), bad_text().map(lambda s: (s, "y"))),
            "title": bad_text(),
        },
    ),
    Case(
        plots.plot_speed_vs_error,
        lambda: dict(levers={"a": (1.0, 0.0), "b": (2.0, 1e-3)}, budget=1e-3, title="t"),
        {
            "levers": st.one_of(
                not_a_mapping(), st.just({}), st.just({"a": (0.0, 1.0)}), st.just({"a": (1.0, -1.0)}),
                st.just({"a": (1.0,)}), bad_real(positive=True).map(lambda v: {"a": (v, 1.0)}),
            ),
            "budget": bad_real(positive=True).filter(lambda v: v is not None),
            "title": bad_text(),
        },
    ),
    Case(
        plots.plot_divergence,
        lambda: dict(divergence=_divergence(), title="t"),
        {"divergence": anything_but(), "title": bad_text()},
    ),
    Case(diagrams.draw_worker_seeding, lambda: dict(workers=2), {"workers": bad_int(min=1, max=4)}),
    Case(diagrams.draw_reduction_orders, lambda: dict(n=4), {"n": st.one_of(bad_int(min=4, max=16), st.just(6))}),
    Case(diagrams.draw_ring_allreduce, lambda: dict(ranks=3), {"ranks": bad_int(min=2, max=8)}),
    Case(diagrams.draw_launch_timeline, lambda: dict(kernels=3), {"kernels": bad_int(min=2, max=8)}),
    Case(
        plots.plot_tolerance_band,
        lambda: dict(results=_runs(), expected=torch.tensor([1.0, 3.0, 2.5]), rtol=1e-3, atol=1e-3, title="t"),
        {
            "results": st.one_of(
                not_a_mapping(),
                malformed(_runs, junk=NEVER_VALID),
                bad_real_tensor((3,)).map(lambda t: {"default": t}),
                st.just({"default": torch.ones(4)}),  # shaped unlike expected
            ),
            "expected": st.one_of(bad_real_tensor((3,)), st.just(torch.ones(2, 2))),
            "rtol": bad_real(min=0.0),
            "atol": bad_real(min=0.0),
            "title": bad_text(),
        },
    ),
    Case(
        plots.plot_run_spread,
        lambda: dict(runs=_runs(), exact=2.0, unit=0.5, unit_name="ULPs", title="t"),
        {
            "runs": st.one_of(
                not_a_mapping(),
                malformed(_runs, junk=NEVER_VALID),
                bad_real_tensor((3,)).map(lambda t: {"default": t}),
            ),
            "exact": bad_real(),
            "unit": st.one_of(bad_real(positive=True), st.just(1e-320)),
            "unit_name": bad_text(),
            "title": bad_text(),
        },
    ),
]

CASES = COMPARE_CASES + BENCH_CASES


# ----------------------------------------------------------------------------- the property tests


def test_valid_calls_work():
    for case in CASES + TIMED_CASES + PLOT_CASES:
        case.fn(**case.valid())
    plt.close("all")


def test_valid_timed_calls_reach_the_timer():
    # So that "no Timer was created" below means the check came first, not that nothing is timed.
    for case in TIMED_CASES:
        FakeTimer.created.clear()
        case.fn(**case.valid())
        assert FakeTimer.created, case


@pytest.mark.parametrize("case, param", case_params(CASES))
@given(data=st.data())
@EXAMPLES
def test_bad_input_gets_a_clear_error(case, param, data):
    check_case(case, param, data)


@pytest.mark.parametrize("case, param", case_params(TIMED_CASES))
@given(data=st.data())
@EXAMPLES
def test_bad_input_is_refused_before_anything_is_timed(case, param, data):
    FakeTimer.created.clear()
    MADE.clear()
    check_case(case, param, data)
    assert FakeTimer.created == [] and MADE == []


@pytest.mark.parametrize("case, param", case_params(PLOT_CASES))
@given(data=st.data())
@EXAMPLES
def test_bad_input_is_refused_before_a_figure_is_made(case, param, data):
    plt.close("all")
    try:
        check_case(case, param, data)
        assert plt.get_fignums() == []
    finally:
        plt.close("all")


# ----------------------------------------------------------------------------- compare: examples


def test_compare_does_not_broadcast_and_names_both_shapes():
    error = assert_clear_error(lambda: compare(torch.ones(4, 1), torch.ones(4)), "actual")
    assert "(4, 1)" in str(error) and "expected (4,)" in str(error)


def test_compare_accepts_numpy_and_tensor_tolerances_as_numbers():
    a, b = _tensors()
    assert compare(a, b, rtol=np.float64(1e-3), atol=torch.tensor(1e-5)).rtol == 1e-3


@pytest.mark.parametrize(
    "tolerances, path, error",
    [
        ({"fc.weight": (-1e-3, 1e-5)}, "tolerances['fc.weight'][0]", ValueError),
        ({"fc.weight": (1e-3, math.nan)}, "tolerances['fc.weight'][1]", ValueError),
        ({"fc.weight": (1e-3, math.inf)}, "tolerances['fc.weight'][1]", ValueError),
        ({"fc.weight": ("1e-3", 0.0)}, "tolerances['fc.weight'][0]", TypeError),
        ({"fc.weight": (None, None)}, "tolerances['fc.weight'][0]", TypeError),
        ({"fc.weight": 1e-3}, "tolerances['fc.weight']", TypeError),
        ({"fc.weight": (1e-3,)}, "tolerances['fc.weight']", ValueError),
        ({"fc.weight": (1e-3, 0.0, 0.0)}, "tolerances['fc.weight']", ValueError),
        ({"fc.weigth": (1e-3, 0.0)}, "tolerances['fc.weigth']", ValueError),
        ({0: (1e-3, 0.0)}, "tolerances", TypeError),
        ([("fc.weight", (1e-3, 0.0))], "tolerances", TypeError),
    ],
)
def test_a_malformed_tolerance_map_is_named_down_to_the_bad_part(tolerances, path, error):
    raised = assert_clear_error(
        lambda: compare_named(_named_tensors(), _named_tensors(), tolerances), path
    )
    assert isinstance(raised, error)


def test_an_unknown_tolerance_name_lists_the_tensors():
    message = str(assert_clear_error(
        lambda: compare_named(_named_tensors(), _named_tensors(), {"fc.wieght": (1e-3, 0.0)}), "tolerances"
    ))
    assert "'fc.wieght'" in message and "'fc.weight'" in message and "'fc.bias'" in message


def test_names_on_one_side_only_are_named_and_it_is_still_a_key_error():
    actual = _named_tensors() | {"extra": torch.ones(2)}
    expected = {"fc.weight": _named_tensors()["fc.weight"], "other": torch.ones(2)}
    with pytest.raises(KeyError, match="different tensors") as info:
        compare_named(actual, expected)
    assert isinstance(info.value, ValueError) and isinstance(info.value, NameMismatchError)
    message = str(info.value)
    assert "'extra', 'fc.bias' only in actual" in message and "'other' only in expected" in message
    assert not message.startswith('"')  # shown as written, not quoted like a plain KeyError


@pytest.mark.parametrize(
    "bad, path",
    [
        (torch.ones(3), "actual['fc.bias']"),  # shape (3,) against (2,)
        (torch.ones(2, dtype=torch.int64), "actual['fc.bias']"),
        (torch.tensor([1.0, math.nan]), "actual['fc.bias']"),
        ([1.0, 1.0], "actual['fc.bias']"),
    ],
)
def test_a_bad_named_tensor_is_named_by_its_key(bad, path):
    actual = _named_tensors() | {"fc.bias": bad}
    assert_clear_error(lambda: compare_named(actual, _named_tensors()), path)


def test_shape_mismatch_in_compare_named_names_both_keys():
    expected = _named_tensors() | {"fc.bias": torch.ones(1, 2)}
    message = str(assert_clear_error(lambda: compare_named(_named_tensors(), expected), "actual['fc.bias']"))
    assert "expected['fc.bias'] (1, 2)" in message


def test_compare_named_refuses_to_compare_nothing():
    assert_clear_error(lambda: compare_named({}, {}), "actual")


def test_compare_named_checks_every_tolerance_before_comparing():
    with mock.patch("helpers.compare._compare", side_effect=AssertionError("compared")):
        assert_clear_error(
            lambda: compare_named(_named_tensors(), _named_tensors(), {"fc.bias": (1e-3, -1.0)}),
            "tolerances['fc.bias'][1]",
        )


def test_valid_named_results_are_unchanged():
    report = compare_named(_named_tensors(), _named_tensors(1 + 1e-4), {"fc.weight": (1e-3, 0.0)})
    assert report.comparisons["fc.weight"].close and report.comparisons["fc.weight"].rtol == 1e-3
    assert report.comparisons["fc.bias"] == compare(torch.ones(2), torch.ones(2) * (1 + 1e-4))
    assert list(report.comparisons) == ["fc.weight", "fc.bias"]


# ----------------------------------------------------------------------------- bench: examples


def test_sweep_names_the_bad_size_and_times_nothing():
    MADE.clear()
    with mock.patch.object(torch.utils.benchmark, "Timer", FakeTimer):
        FakeTimer.created.clear()
        assert_clear_error(lambda: bench.sweep(_make_call, [16, 32, 0], work=lambda n: n), "sizes[2]")
        assert_clear_error(lambda: bench.sweep(_make_call, [16, 2.5], work=lambda n: n), "sizes[1]")
        assert_clear_error(
            lambda: bench.sweep(_make_call, [16, 32], work=lambda n: math.nan if n == 32 else n), "work(32)"
        )
        assert_clear_error(lambda: bench.sweep(lambda n: None, [16], work=lambda n: n), "make_call(16)")
    assert FakeTimer.created == [] and MADE == []


def test_time_call_names_threads():
    with mock.patch.object(torch.utils.benchmark, "Timer", FakeTimer):
        FakeTimer.created.clear()
        for bad in (0, -2, 1.5, "4", True):
            assert_clear_error(lambda bad=bad: bench.time_call(lambda: None, threads=bad), "threads")
        assert FakeTimer.created == []
        bench.time_call(lambda: None, threads=np.int64(2))
        assert FakeTimer.created[-1]["num_threads"] == 2


def test_rates_keep_their_values():
    assert bench.gflop_per_s(2 * 512**3, 0.25) == 2 * 512**3 / 0.25 / 1e9
    assert bench.gb_per_s(0, 1.0) == 0.0


# ----------------------------------------------------------------------------- plots: examples


@pytest.fixture
def no_figures():
    plt.close("all")
    yield
    assert plt.get_fignums() == [], "a figure was created for a bad argument"
    plt.close("all")


def test_series_of_mismatched_length_are_named_by_key(no_figures):
    error = assert_clear_error(lambda: plots.plot_sweeps({"CPU": ([1, 2], [1.0])}, "n", "r"), "series['CPU']")
    message = str(error)
    assert "2 sizes" in message and "1 values" in message
    assert_clear_error(
        lambda: plots.plot_error_growth([2, 4], _errors(), {"sequential bound": [1.0]}),
        "bounds['sequential bound']",
    )
    assert_clear_error(lambda: plots.plot_error_growth([2, 4, 8], _errors()), "errors['sequential']")


def test_non_finite_data_is_named_down_to_the_value(no_figures):
    assert_clear_error(lambda: plots.plot_error_growth([2, 4], {"x": [1e-8, math.nan]}), "errors['x'][1]")
    assert_clear_error(
        lambda: plots.plot_sweeps({"CPU": ([1, 2], [1.0, math.inf])}, "n", "r"), "series['CPU'][1][1]"
    )
    assert_clear_error(lambda: plots.plot_roofline({"op": (math.nan, 1.0)}, 10.0, 1.0), "points['op'][0]")
    assert_clear_error(
        lambda: plots.plot_run_spread({"a": torch.tensor([1.0, math.inf])}, 0.0, 1.0), "runs['a']"
    )
    assert_clear_error(lambda: plots.plot_sum_spread(torch.tensor([1.0, math.nan]), 0.0, 1.0), "sums")


def test_run_spread_names_the_run_that_is_not_1d(no_figures):
    error = assert_clear_error(lambda: plots.plot_run_spread({"a": torch.ones(2, 2)}, 0.0, 1.0), "runs['a']")
    assert "1-D" in str(error)


def test_a_range_beyond_float32_is_refused(no_figures):
    assert_clear_error(
        lambda: plots.plot_roofline({"op": (1.0, 1.0)}, 1e300, 1e-300), "peak_gflops / peak_gbps"
    )
    assert_clear_error(lambda: plots.plot_roofline({"op": (1e-60, 1.0)}, 10.0, 1.0), "points")
    assert_clear_error(lambda: plots.plot_sum_spread(torch.tensor([1.0, 3.0]), 2.0, 1e-320), "unit")


def test_series_may_be_tensors_or_arrays():
    try:
        fig, ax = plots.plot_error_growth(
            torch.tensor([2, 4]), {"x": np.array([1e-8, 2e-8])}, {"x bound": torch.tensor([1e-7, 2e-7])}
        )
        measured, bound = ax.get_lines()
        assert list(measured.get_xdata()) == [2, 4] and list(bound.get_ydata()) == pytest.approx([1e-7, 2e-7])
        fig, ax = plots.plot_sweeps({"a": (np.array([1, 2]), torch.tensor([3.0, 4.0]))}, "n", "r")
        assert list(ax.get_lines()[0].get_ydata()) == [3.0, 4.0]
    finally:
        plt.close("all")


# ----------------------------------------------------------------------------- audit regressions


def test_an_overflowing_difference_is_an_infinite_error_and_not_close():
    big = torch.tensor([1e308], dtype=torch.float64)
    result = compare(big, -big)
    assert result.max_abs_error == math.inf and result.max_rel_error == math.inf and not result.close
    assert "inf" in str(result) and "FAIL" in str(result)
    infinite = {**_comparison_fields(), "max_abs_error": math.inf}  # and close=True
    assert_clear_error(lambda: Comparison(**infinite), "max_abs_error")
    fields = {**_comparison_fields(), "max_abs_error": math.inf, "max_rel_error": math.inf, "close": False}
    assert Comparison(**fields).max_abs_error == math.inf
    assert_clear_error(lambda: Comparison(**{**fields, "max_abs_error": math.nan}), "max_abs_error")


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("layout", [torch.strided, torch.jagged])
def test_nested_tensors_are_refused_by_name(layout):
    nested = torch.nested.nested_tensor([torch.ones(2), torch.ones(3)], layout=layout)
    error = assert_clear_error(lambda: compare(nested, nested), "actual")
    assert "nested" in str(error)
    error = assert_clear_error(lambda: compare(torch.ones(2), nested), "expected")
    assert "nested" in str(error)
    assert_clear_error(lambda: compare_named({"w": nested}, {"w": nested}), "actual['w']")


def test_reduction_tolerances_refuse_huge_counts_and_overflow():
    error = assert_clear_error(lambda: reduction_tolerances(torch.float32, 10**400), "k")
    assert len(str(error)) < 200
    assert reduction_tolerances(torch.float32, 2**53)[0] > 0
    assert_clear_error(lambda: reduction_tolerances(torch.float32, 10**10, 1e308, 1e308), "safety")
    assert_clear_error(lambda: reduction_tolerances(torch.float32, 10**10, 1e308, 1e8), "scale")
    assert reduction_tolerances(torch.float32, 64, 2.0, 4.0) == (2**-19, 2**-18)  # 4 u sqrt(64), unchanged


def test_a_huge_count_in_a_comparison_is_refused_with_a_short_message():
    for field in ("numel", "max_ulp"):
        fields = {**_comparison_fields(), field: 2**100000}
        error = assert_clear_error(lambda fields=fields: Comparison(**fields), field)
        assert len(str(error)) < 200
    assert Comparison(**{**_comparison_fields(), "max_ulp": 2**64 - 1}).max_ulp == 2**64 - 1


def test_timing_refuses_runaway_arguments_before_timing():
    with mock.patch.object(torch.utils.benchmark, "Timer", FakeTimer):
        FakeTimer.created.clear()
        error = assert_clear_error(lambda: bench.time_call(lambda: None, threads=2**31), "threads")
        assert str(2**15) in str(error)
        assert_clear_error(lambda: bench.time_call(lambda: None, min_run_time=1e6), "min_run_time")
        assert_clear_error(
            lambda: bench.sweep(_make_call, [1], lambda n: 1.0, min_run_time=1e6), "min_run_time"
        )
        assert FakeTimer.created == []
        bench.time_call(lambda: None, min_run_time=600, threads=2**15)
        assert FakeTimer.created[-1]["num_threads"] == 2**15


def test_rates_never_come_out_infinite():
    assert bench.Timing(0.0, 1.0, 1).spread == math.inf  # a Timing may be 0 s; a rate may not
    assert_clear_error(lambda: bench.SweepPoint(1, bench.Timing(0.0, 0.0, 1), 1.0), "median")
    assert_clear_error(lambda: bench.gflop_per_s(1e300, 1e-300), "seconds")
    assert_clear_error(lambda: bench.gb_per_s(1.0, 5e-324), "seconds")
    assert_clear_error(lambda: bench.SweepPoint(1, bench.Timing(5e-324, 0.0, 1), 1e300), "median")
    point = bench.SweepPoint(1, bench.Timing(5e-324, 0.0, 1), 0.0)
    assert point.rate == 0.0 and "0.00" in str(bench.sweep_table([point], "GB/s"))


def test_float_subclasses_that_fail_are_formatted_as_floats():
    from helpers.tables import Table, format_value

    class BadFormat(float):
        def __format__(self, spec):
            raise RuntimeError("format")

    class BadEq(float):
        __hash__ = float.__hash__

        def __eq__(self, other):
            raise RuntimeError("eq")

    class BadAbs(float):
        def __abs__(self):
            raise RuntimeError("abs")

    for kind in (BadFormat, BadEq, BadAbs):
        assert format_value(kind(1.5)) == format_value(1.5) == "1.5"
        assert format_value(kind(1e-9)) == "1.000e-09"
    assert "1.5" in str(Table(["x"], [[BadFormat(1.5)]]))
    assert format_value(np.float64(2.5e7)) == format_value(2.5e7) == "2.500e+07"


@pytest.mark.parametrize("text", BAD_MATHTEXT)
def test_bad_mathtext_is_refused_before_a_figure_is_made(no_figures, text):
    ok = ([1, 2], [1.0, 2.0])
    assert_clear_error(lambda: plots.plot_sweeps({text: ok}, "n", "r"), "series")
    assert_clear_error(lambda: plots.plot_sweeps({"a": ok}, text, "r"), "xlabel")
    errors = {"a": [1.0, 2.0]}
    assert_clear_error(lambda: plots.plot_error_growth([1, 2], errors, {text: [1.0, 2.0]}), "bounds")
    assert_clear_error(lambda: plots.plot_roofline({text: (1.0, 1.0)}, 10.0, 1.0), "points")
    assert_clear_error(lambda: plots.plot_run_spread({text: torch.ones(3)}, 0.0, 1.0), "runs")
    assert_clear_error(lambda: plots.plot_sum_spread(torch.ones(3), 0.0, 1.0, unit_name=text), "unit_name")


def test_good_mathtext_and_lone_dollars_still_plot():
    try:
        series = {"$x^2$": ([1, 2], [1.0, 2.0])}
        fig, ax = plots.plot_sweeps(series, "costs $5", "$\\sqrt{n}$", title="$a$ and $")
        fig.canvas.draw()
        assert ax.get_xlabel() == "costs $5"
    finally:
        plt.close("all")


def test_sums_too_far_from_exact_for_the_bins_are_refused(no_figures):
    error = assert_clear_error(lambda: plots.plot_sum_spread(torch.ones(10), 0.0, 1e-20), "unit")
    assert "exact" in str(error)


def test_sum_spread_bins_are_unchanged():
    try:
        sums = torch.tensor([1.0, 1.0, 3.0, 2.5])
        fig, ax = plots.plot_sum_spread(sums, 2.0, 0.5)
        edges = [p.get_x() for p in ax.patches] + [ax.patches[-1].get_x() + ax.patches[-1].get_width()]
        assert edges == pytest.approx(list(np.histogram_bin_edges(((sums - 2.0) / 0.5).numpy(), bins=10)))
    finally:
        plt.close("all")


def test_big_series_are_checked_as_a_whole(no_figures):
    import time

    big = torch.ones(1).expand(10**7)
    start = time.perf_counter()
    assert len(plots._check_series(big, "xs", positive=True)) == 10**7
    assert len(plots._check_series(np.ones(10**7), "xs", positive=True)) == 10**7
    assert time.perf_counter() - start < 10
    values = torch.ones(10**6)
    values[123456] = 0.0
    assert_clear_error(lambda: plots.plot_sweeps({"a": (values, values)}, "n", "r"), "series['a'][0][123456]")
    array = np.ones(10**6)
    array[1] = -1.0
    assert_clear_error(lambda: plots.plot_error_growth([2, 4], {"a": array[:2]}), "errors['a'][1]")
    array[1] = np.nan
    assert_clear_error(lambda: plots.plot_error_growth([2, 4], {"a": array[:2]}), "errors['a'][1]")
