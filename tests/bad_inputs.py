"""Bad inputs for the helpers as hypothesis strategies, and the rule every public helper obeys.

The rule (``assert_clear_error``): given a bad argument, a helper raises ``TypeError`` (wrong kind)
or ``ValueError`` (right kind, wrong value), raised by the helpers' own code (not from deep inside
numpy or torch), with a message that names the parameter.

The test files ``test_bad_inputs_*.py`` describe each helper as a ``Case``: a call that works, and
for each parameter a strategy of bad values; ``check_case`` swaps one bad value in at a time.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest
import torch
from hypothesis import strategies as st

import helpers

HELPERS_DIR = Path(helpers.__file__).resolve().parent


# ----------------------------------------------------------------------------- the rule


def assert_clear_error(call: Callable[[], object], param: str) -> BaseException:
    """``call()`` must raise TypeError/ValueError from src/helpers whose message names ``param``."""
    with pytest.raises((TypeError, ValueError)) as info:
        call()
    message = str(info.value)
    assert param in message, f"the error does not name {param!r}: {type(info.value).__name__}: {message}"
    raised_in = Path(str(info.traceback[-1].path)).resolve()
    assert raised_in.is_relative_to(HELPERS_DIR), (
        f"{type(info.value).__name__} for {param!r} was raised in {raised_in}, not by the helpers: {message}"
    )
    return info.value


class Case:
    """One public helper: ``fn(**valid())`` works; ``bad[p]`` draws values that must be refused.

    ``names`` maps a parameter to the text its error must contain when that differs from the
    parameter's own name (for example a nested key). ``valid`` is a function so that each example
    gets fresh tensors and structures. (A plain class, not a dataclass: hypothesis then prints a
    failing case by its name instead of every strategy.)
    """

    def __init__(
        self,
        fn: Callable,
        valid: Callable[[], dict],
        bad: dict[str, st.SearchStrategy],
        names: dict[str, str] | None = None,
    ) -> None:
        self.fn, self.valid, self.bad, self.names = fn, valid, bad, names or {}

    def __repr__(self) -> str:
        return getattr(self.fn, "__qualname__", repr(self.fn))

    __str__ = __repr__


def case_params(cases: list[Case]) -> list:
    """``pytest.param(case, parameter)`` for every bad parameter of every case, with readable ids."""
    return [pytest.param(c, p, id=f"{c}-{p}") for c in cases for p in c.bad]


def check_case(case: Case, param: str, data: st.DataObject) -> None:
    kwargs = case.valid()
    kwargs[param] = data.draw(case.bad[param], label=param)
    assert_clear_error(lambda: case.fn(**kwargs), case.names.get(param, param))


# ----------------------------------------------------------------------------- strategies

_OBJECTS = st.sampled_from([object(), Ellipsis, NotImplemented, type, print, 1j, b"bytes", bytearray(2)])

#: Values of every common kind; ``anything_but`` filters out the acceptable ones.
ANYTHING = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.complex_numbers(max_magnitude=1e6),
    st.text(max_size=8),
    st.lists(st.integers(-3, 3), max_size=3),
    st.tuples(st.floats(-2, 2)),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.sets(st.integers(0, 3), max_size=2),
    _OBJECTS,
    st.builds(torch.zeros, st.integers(0, 3)),
    st.sampled_from([torch.float32, torch.int64, torch.device("cpu")]),
)


def anything_but(*kinds: type, also: Callable[[object], bool] | None = None) -> st.SearchStrategy:
    """Values that are none of ``kinds`` (bools count as their own kind, not as ints)."""

    def acceptable(v: object) -> bool:
        if isinstance(v, bool):
            return bool in kinds
        return isinstance(v, kinds) or (also is not None and also(v))

    return ANYTHING.filter(lambda v: not acceptable(v))


def not_a_tensor() -> st.SearchStrategy:
    return anything_but(torch.Tensor)


def not_an_int() -> st.SearchStrategy:
    """Floats, bools, strings, None, containers, tensors with more than one element, ..."""
    return st.one_of(
        anything_but(int, torch.Tensor),
        st.floats(allow_nan=True, allow_infinity=True),
        st.booleans(),
        st.just(torch.tensor([1, 2])),
        st.just(torch.tensor(1.5)),
    )


def bad_int(min: int | None = None, max: int | None = None) -> st.SearchStrategy:
    """Non-integers, and integers outside [min, max]."""
    options = [not_an_int()]
    if min is not None:
        options.append(st.integers(min - 2**40, min - 1))
    if max is not None:
        options.append(st.integers(max + 1, max + 2**40))
    return st.one_of(*options)


def not_a_real() -> st.SearchStrategy:
    return st.one_of(
        anything_but(int, float, torch.Tensor),
        st.booleans(),
        st.complex_numbers(min_magnitude=1, max_magnitude=10),
        st.just(torch.tensor([1.0, 2.0])),
    )


def bad_real(
    min: float | None = None, max: float | None = None, positive: bool = False, finite: bool = True
) -> st.SearchStrategy:
    """Non-numbers, NaN, infinities (when ``finite``), and numbers outside the allowed range."""
    options = [not_a_real(), st.just(math.nan), st.just(float("nan"))]
    if finite:
        options.append(st.sampled_from([math.inf, -math.inf]))
    if positive:
        options.append(st.floats(max_value=0.0, allow_nan=False, allow_infinity=False))
    if min is not None:
        options.append(st.floats(max_value=min, exclude_max=True, allow_nan=False, allow_infinity=False))
    if max is not None:
        options.append(st.floats(min_value=max, exclude_min=True, allow_nan=False, allow_infinity=False))
    return st.one_of(*options)


def not_a_str() -> st.SearchStrategy:
    return anything_but(str)


def bad_choice(choices: list[str]) -> st.SearchStrategy:
    """Non-strings, and strings that are not among ``choices``."""
    return st.one_of(not_a_str(), st.text(max_size=10).filter(lambda s: s not in choices))


def not_a_dtype() -> st.SearchStrategy:
    return st.one_of(anything_but(torch.dtype), st.sampled_from(["float32", "torch.float32", float, int]))


def bad_dtype(allowed: list[torch.dtype]) -> st.SearchStrategy:
    others = [d for d in (torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int8,
                          torch.int32, torch.int64, torch.bool, torch.complex64, torch.uint8)
              if d not in allowed]
    return st.one_of(not_a_dtype(), st.sampled_from(others))


def not_callable() -> st.SearchStrategy:
    return ANYTHING.filter(lambda v: not callable(v))


def bad_device() -> st.SearchStrategy:
    return st.one_of(
        anything_but(str, torch.device),
        st.sampled_from(["gpu", "cuda:x", "", "cpu:", "cpu:-1", "tpu", "CPU ", "cuda::0"]),
    )


def non_finite_tensor(dtype: torch.dtype = torch.float32, shape: tuple[int, ...] = (4,)) -> st.SearchStrategy:
    """A float tensor of ``shape`` with at least one NaN or ±inf."""
    n = math.prod(shape)

    def build(values: list[float], where: int, bad: float) -> torch.Tensor:
        values[where % n] = bad
        return torch.tensor(values, dtype=dtype).reshape(shape)

    return st.builds(
        build,
        st.lists(st.floats(-100, 100), min_size=n, max_size=n),
        st.integers(0, n - 1),
        st.sampled_from([math.nan, math.inf, -math.inf]),
    )


def bad_tensor(
    dtypes: list[torch.dtype] | None = None, *, finite: bool = False, shape: tuple[int, ...] = (4,)
) -> st.SearchStrategy:
    """Non-tensors; tensors of other dtypes (when ``dtypes`` is given); non-finite tensors (``finite``)."""
    options = [not_a_tensor()]
    if dtypes is not None:
        others = [d for d in (torch.int64, torch.int32, torch.bool, torch.uint8, torch.complex64,
                              torch.float16, torch.bfloat16, torch.float32, torch.float64) if d not in dtypes]
        options.append(st.sampled_from(others).map(lambda d: torch.zeros(shape, dtype=d)))
    if finite:
        allowed = [d for d in (dtypes or [torch.float32]) if d.is_floating_point]
        options.append(st.sampled_from(allowed).flatmap(lambda d: non_finite_tensor(d, shape)))
    return st.one_of(*options)


# ----------------------------------------------------------------------------- malformed structures


def _paths(obj: object, prefix: tuple = ()) -> list[tuple]:
    """Every path (a tuple of keys and indices) into nested dicts, lists, tuples and dataclasses."""
    found = [prefix] if prefix else []
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        children = [(f.name, getattr(obj, f.name)) for f in dataclasses.fields(obj)]
    elif isinstance(obj, Mapping):
        children = list(obj.items())
    elif isinstance(obj, (list, tuple)):
        children = list(enumerate(obj))
    else:
        children = []
    for key, child in children:
        found += _paths(child, (*prefix, key))
    return found


def _replace(obj: object, path: tuple, new: object, delete: bool) -> object:
    key, rest = path[0], path[1:]
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        child = getattr(obj, key)
        return dataclasses.replace(obj, **{key: new if not rest else _replace(child, rest, new, delete)})
    if isinstance(obj, Mapping):
        out = dict(obj)
        if not rest and delete:
            del out[key]
        else:
            out[key] = new if not rest else _replace(obj[key], rest, new, delete)
        return out
    items = list(obj)  # list or tuple
    if not rest and delete:
        del items[key]
    else:
        items[key] = new if not rest else _replace(items[key], rest, new, delete)
    return type(obj)(items) if isinstance(obj, list) else tuple(items)


JUNK = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**66), 2**66),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=5),
    st.lists(st.none(), max_size=2),
    st.dictionaries(st.text(max_size=2), st.none(), max_size=1),
    st.just(torch.tensor([math.nan])),
    st.just(torch.zeros(3, dtype=torch.int64)),
)


@st.composite
def malformed(draw, valid: Callable[[], object], junk: st.SearchStrategy = JUNK, extra_keys: bool = True):
    """A copy of the nested structure ``valid()`` with one part broken.

    One path into it is chosen; the value there is deleted (dict keys, list items) or replaced by
    ``junk``; or, at the top of a mapping, an unknown key is added (``extra_keys``). Replacements
    equal to the original (a junk 0 over a 0) are redrawn, so every example really is broken in
    shape or kind, though not necessarily in a way a check could see: ``Case.bad`` strategies built
    from this should be paired with helpers that validate the whole structure.
    """
    obj = valid()
    paths = _paths(obj)
    choices = ["replace"] + (["delete"] if paths else []) + (["extra"] if extra_keys and isinstance(obj, Mapping) else [])
    action = draw(st.sampled_from(choices))
    if action == "extra":
        out = dict(obj)  # type: ignore[arg-type]
        out[draw(st.text(min_size=1, max_size=6).filter(lambda k: k not in out))] = draw(junk)
        return out
    if not paths:
        return draw(junk)
    path = draw(st.sampled_from(paths))
    if action == "delete":
        parent = obj
        for key in path[:-1]:
            parent = getattr(parent, key) if dataclasses.is_dataclass(parent) else parent[key]
        if dataclasses.is_dataclass(parent) or not isinstance(parent, (Mapping, list, tuple)):
            action = "replace"
    original = obj
    for key in path:
        original = getattr(original, key) if dataclasses.is_dataclass(original) else original[key]
    new = draw(junk.filter(lambda v: not same_value(v, original)))
    return _replace(copy.deepcopy(obj), path, new, delete=action == "delete")


def same_value(a: object, b: object) -> bool:
    """Equal in type and value, element by element through dicts, lists and tuples, never raising."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, torch.Tensor):
        return a.shape == b.shape and a.dtype == b.dtype and bool((a == b).all())
    try:
        return bool(a == b)
    except Exception:
        return False


def non_dense_tensor(shape: tuple[int, ...] = (4,), dtype: torch.dtype = torch.float32) -> st.SearchStrategy:
    """Tensors of ``shape`` that are not dense: sparse COO, sparse CSR (2-D shapes) and nested ones."""
    builders = [lambda: torch.ones(shape, dtype=dtype).to_sparse()]
    if len(shape) == 2:
        builders.append(lambda: torch.ones(shape, dtype=dtype).to_sparse_csr())
    if len(shape) >= 2:  # a jagged nested tensor needs components of at least one dimension
        builders.append(
            lambda: torch.nested.nested_tensor(
                [torch.ones(shape[1:], dtype=dtype)] * shape[0], layout=torch.jagged
            )
        )

    def build(make: Callable[[], torch.Tensor]) -> torch.Tensor:
        with warnings.catch_warnings():  # "sparse CSR support is in beta state"
            warnings.simplefilter("ignore", UserWarning)
            return make()

    return st.sampled_from(builders).map(build)
