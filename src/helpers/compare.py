"""Compare two tensors that may live on different devices or have different dtypes.

Introduced in lesson ``01_floating_point_non_associativity``; lesson 10 builds on it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import torch

from helpers._validate import check_dtype, check_int, check_mapping, check_real, check_sequence, check_tensor
from helpers.floats import FORMATS, max_ulp_distance
from helpers.show.tables import Table

__all__ = [
    "Comparison",
    "NameMismatchError",
    "NamedComparison",
    "compare",
    "compare_named",
    "default_tolerances",
    "reduction_tolerances",
]

# torch.testing.assert_close's defaults (rtol, atol), from its documentation.
_DEFAULT_TOLERANCES: dict[torch.dtype, tuple[float, float]] = {
    torch.float16: (1e-3, 1e-5),
    torch.bfloat16: (1.6e-2, 1e-5),
    torch.float32: (1.3e-6, 1e-5),
    torch.float64: (1e-7, 1e-7),
}


_FORMAT_NAMES = "float16, bfloat16, float32, float64"

#: The largest ``k`` :func:`reduction_tolerances` accepts: 2**53 terms, far more than any tensor
#: sums, and the last count a float64 holds exactly.
MAX_REDUCTION_TERMS = 2**53


class NameMismatchError(ValueError):
    """Raised by :func:`compare_named` when the two mappings do not name the same tensors."""


def default_tolerances(dtype: torch.dtype) -> tuple[float, float]:
    """``(rtol, atol)`` that ``torch.testing.assert_close`` uses by default for ``dtype``.

    Introduced in lesson 01; lesson 03 explains where they come from.

    Raises:
        TypeError: ``dtype`` is not a ``torch.dtype``, or is not one of float16, bfloat16,
            float32 and float64.
    """
    check_dtype(dtype, "dtype")
    if dtype not in _DEFAULT_TOLERANCES:
        raise TypeError(f"no default tolerances for dtype {dtype}; use a floating dtype: {_FORMAT_NAMES}")
    return _DEFAULT_TOLERANCES[dtype]


def _check_count(value: object, name: str, low: int, high: int) -> int:
    """An int in [low, high]; one too large is described by its size (its digits may not print)."""
    number = check_int(value, name, min=low)
    if number > high:
        raise ValueError(f"{name} must be at most {high}, got a {number.bit_length()}-bit integer")
    return number


@dataclass(frozen=True)
class Comparison:
    """How far apart two tensors are, by several measures, made by :func:`compare`. Introduced in lesson 01.

    ``max_abs_error`` and ``max_rel_error`` may be ``inf`` (never NaN): the difference of two
    finite float64 values can overflow float64 (``1e308`` against ``-1e308``), and then the
    tensors are not close.
    """

    dtype: torch.dtype
    numel: int
    max_abs_error: float
    max_rel_error: float
    max_ulp: int
    frac_bitwise_equal: float
    rtol: float
    atol: float
    close: bool

    @property
    def bitwise_equal(self) -> bool:
        """True when every element has the same bits: ``-0.0`` against ``0.0`` is a difference.

        ``max_ulp`` counts ``-0.0`` and ``0.0`` as 0 ULPs apart (they are equal numbers); the
        fraction of equal bits is where a sign-of-zero difference shows.
        """
        return self.frac_bitwise_equal == 1.0

    def table(self, title: str = "Comparison") -> Table:
        """The measures as a :class:`helpers.show.tables.Table`."""
        name = str(self.dtype).replace("torch.", "")
        return Table(
            ["measure", "value"],
            [
                ("compared as", f"{name}, {self.numel} elements"),
                ("max abs error", self.max_abs_error),
                ("max rel error", self.max_rel_error),
                ("max ULP distance", self.max_ulp),
                ("fraction bitwise equal", round(self.frac_bitwise_equal, 6)),
                (f"assert_close (rtol={self.rtol:g}, atol={self.atol:g})", "pass" if self.close else "FAIL"),
            ],
            title=title,
        )

    def __str__(self) -> str:
        return str(self.table())

    __repr__ = __str__

    def _repr_html_(self) -> str:
        return self.table()._repr_html_()


def _check_tolerance(value: object, name: str) -> float:
    """``rtol`` or ``atol``: a non-negative finite real, as a float."""
    return check_real(value, name, min=0.0)


def _check_compared(value: object, name: str) -> torch.Tensor:
    """One side of a comparison: a dense tensor of a floating format, holding values (not on meta)."""
    t = check_tensor(value, name)
    if t.dtype not in FORMATS:
        raise TypeError(f"{name} has dtype {t.dtype}; compare works on {_FORMAT_NAMES}")
    if t.device.type == "meta":
        raise ValueError(f"{name} is on the meta device: it holds no values to compare")
    return t


def _compare(
    actual: torch.Tensor,
    expected: torch.Tensor,
    rtol: float | None,
    atol: float | None,
    names: tuple[str, str] = ("actual", "expected"),
) -> Comparison:
    """:func:`compare` on checked tensors and tolerances; ``names`` are used in the errors."""
    if actual.shape != expected.shape:
        raise ValueError(
            f"shape mismatch: {names[0]} {tuple(actual.shape)} vs {names[1]} {tuple(expected.shape)}; "
            "compare does not broadcast"
        )
    if actual.numel() == 0:
        shape = tuple(actual.shape)
        raise ValueError(f"nothing to compare: {names[0]} and {names[1]} are empty (shape {shape})")
    actual, expected = actual.detach().cpu(), expected.detach().cpu()
    for name, t in zip(names, (actual, expected), strict=True):
        if not torch.isfinite(t).all():
            raise ValueError(f"compare needs finite values: {name} holds NaN or inf")
    dtype = max((actual.dtype, expected.dtype), key=lambda d: torch.finfo(d).eps)
    a, e = actual.to(dtype), expected.to(dtype)
    for name, after in zip(names, (a, e), strict=True):
        if not torch.isfinite(after).all():
            raise ValueError(
                f"compare needs finite values: {name} overflows {dtype} (the dtype it is compared in)"
            )
    diff = (a.double() - e.double()).abs()
    rel = diff / e.double().abs()
    rel = torch.where(diff == 0, torch.zeros_like(rel), rel)
    if rtol is None or atol is None:
        rtol, atol = default_tolerances(dtype)
    try:
        torch.testing.assert_close(a, e, rtol=rtol, atol=atol)
        close = True
    except AssertionError:
        close = False
    return Comparison(
        dtype=dtype,
        numel=a.numel(),
        max_abs_error=float(diff.max()),
        max_rel_error=float(rel.max()),
        max_ulp=max_ulp_distance(a, e),
        frac_bitwise_equal=float((_bits(a) == _bits(e)).double().mean()),
        rtol=rtol,
        atol=atol,
        close=close and bool(torch.isfinite(diff).all()),
    )


_SAME_WIDTH_INT = {8: torch.int64, 4: torch.int32, 2: torch.int16, 1: torch.int8}


def _bits(t: torch.Tensor) -> torch.Tensor:
    """The tensor's bit patterns as integers of the same width (``-0.0`` and ``0.0`` differ)."""
    return t.view(_SAME_WIDTH_INT[t.element_size()])


def compare(
    actual: torch.Tensor, expected: torch.Tensor, rtol: float | None = None, atol: float | None = None
) -> Comparison:
    """Measure how far ``actual`` is from ``expected``.

    Both are copied to the CPU and compared in the less precise of their two dtypes, which is
    also the dtype whose ``assert_close`` default tolerances give the verdict unless ``rtol`` and
    ``atol`` are given (both or neither; non-negative finite numbers). Errors are computed in
    float64. Shapes must match exactly (there is no broadcasting). Where the difference of two
    finite float64 values overflows (``1e308`` against ``-1e308``) the errors are ``inf`` and the
    tensors are not close. Introduced in lesson 01; lesson 10 passes tolerances.

    Raises:
        TypeError: a tensor is not a dense tensor of float16, bfloat16, float32 or float64 (a
            sparse or nested tensor is refused), or a tolerance is not a real number.
        ValueError: the shapes differ, the tensors are empty or hold NaN or inf (or overflow the
            dtype they are compared in), only one of ``rtol`` and ``atol`` is given, or a
            tolerance is negative or not finite.
    """
    if (rtol is None) != (atol is None):
        raise ValueError("give both rtol and atol, or neither")
    if rtol is not None:
        rtol, atol = _check_tolerance(rtol, "rtol"), _check_tolerance(atol, "atol")
    actual, expected = _check_compared(actual, "actual"), _check_compared(expected, "expected")
    return _compare(actual, expected, rtol, atol)


def reduction_tolerances(
    dtype: torch.dtype, k: int, scale: float = 1.0, safety: float = 4.0
) -> tuple[float, float]:
    """``(rtol, atol)`` for results that each sum ``k`` terms, computed in ``dtype`` in any order.

    ``rtol = max(default rtol, safety * u * sqrt(k))``, with ``u`` the dtype's unit roundoff: the
    typical error of a ``k``-term sum grows like ``sqrt(k) u`` (lessons 01 and 03), and ``safety``
    leaves room above the typical case. ``atol = rtol * scale``, where ``scale`` is a typical
    magnitude of the results, so that entries near zero (where a relative error means little)
    are judged on the scale of the others. Introduced in lesson 10.

    ``k`` is at most ``MAX_REDUCTION_TERMS`` (2**53: more terms than any tensor sums, and the
    last count a float64 holds exactly).

    Raises:
        TypeError: ``dtype`` is not a floating dtype, or ``k``, ``scale`` or ``safety`` is not a
            number (``k`` an int).
        ValueError: ``k`` is below 1 or above ``MAX_REDUCTION_TERMS``, ``scale`` or ``safety`` is
            not positive and finite, or they are so large that ``rtol`` or ``atol`` overflows.
    """
    default_rtol, _ = default_tolerances(dtype)
    k = _check_count(k, "k", 1, MAX_REDUCTION_TERMS)
    scale = check_real(scale, "scale", positive=True)
    safety = check_real(safety, "safety", positive=True)
    u = torch.finfo(dtype).eps / 2
    rtol = max(default_rtol, safety * u * math.sqrt(k))
    if not math.isfinite(rtol):
        raise ValueError(f"safety={safety:g} is too large: rtol = safety * u * sqrt(k) overflows")
    if not math.isfinite(rtol * scale):
        raise ValueError(
            f"scale={scale:g} is too large for rtol={rtol:g} (from safety={safety:g} and k={k}): "
            "atol = rtol * scale overflows"
        )
    return rtol, rtol * scale


@dataclass(frozen=True)
class NamedComparison:
    """Comparisons of several named tensors (outputs, gradients), made by :func:`compare_named`. Lesson 10."""

    comparisons: dict[str, Comparison]

    @property
    def close(self) -> bool:
        """True when every named tensor passed its tolerance."""
        return all(c.close for c in self.comparisons.values())

    @property
    def bitwise_equal(self) -> bool:
        return all(c.bitwise_equal for c in self.comparisons.values())

    def table(self, title: str = "Comparison by tensor") -> Table:
        """One row per named tensor, as a :class:`helpers.show.tables.Table`."""
        rows = [
            (
                name,
                c.max_rel_error,
                c.max_ulp,
                round(c.frac_bitwise_equal, 4),
                f"{c.rtol:.1e}",
                "pass" if c.close else "FAIL",
            )
            for name, c in self.comparisons.items()
        ]
        headers = ["tensor", "max rel error", "max ULP", "bitwise equal", "rtol", "verdict"]
        return Table(headers, rows, title=title)

    def __str__(self) -> str:
        return str(self.table())

    __repr__ = __str__

    def _repr_html_(self) -> str:
        return self.table()._repr_html_()


def _check_tolerance_pair(value: object, name: str) -> tuple[float, float]:
    """``(rtol, atol)``: a list or tuple of two non-negative finite reals."""
    rtol, atol = check_sequence(value, name, length=2, item_check=_check_tolerance)
    return rtol, atol


def compare_named(
    actual: Mapping[str, torch.Tensor],
    expected: Mapping[str, torch.Tensor],
    tolerances: Mapping[str, tuple[float, float]] | None = None,
) -> NamedComparison:
    """:func:`compare` for each named tensor; ``actual`` and ``expected`` must name the same ones.

    ``tolerances`` maps a name to ``(rtol, atol)``, two non-negative finite numbers; a name it
    leaves out is judged by its dtype's ``assert_close`` defaults. Both mappings (every tensor's
    kind and dtype) and the whole tolerance map are checked before anything is compared.
    Introduced in lesson 10.

    Raises:
        NameMismatchError: (a ``ValueError``) ``actual`` and ``expected`` do not hold the same names.
        TypeError, ValueError: a mapping, name, tensor or tolerance is malformed (the message
            names it, for example ``tolerances['fc.weight'][0]``), or :func:`compare` refuses a
            pair of tensors (the message names them, for example ``actual['output']``).
    """
    actual = check_mapping(actual, "actual", value_check=_check_compared)
    expected = check_mapping(expected, "expected", value_check=_check_compared)
    if set(actual) != set(expected):
        only_actual = sorted(set(actual) - set(expected))
        only_expected = sorted(set(expected) - set(actual))
        parts = [
            f"{', '.join(map(repr, names))} only in {side}"
            for names, side in ((only_actual, "actual"), (only_expected, "expected"))
            if names
        ]
        raise NameMismatchError(f"actual and expected name different tensors: {'; '.join(parts)}")
    if not expected:
        raise ValueError("actual and expected are empty: nothing to compare")
    if tolerances is None:
        tolerances = {}
    tolerances = check_mapping(tolerances, "tolerances", value_check=_check_tolerance_pair)
    for name in tolerances:
        if name not in expected:
            raise ValueError(
                f"tolerances[{name!r}] names no tensor; the tensors are {', '.join(map(repr, expected))}"
            )
    out = {}
    for name in expected:
        rtol, atol = tolerances.get(name, (None, None))
        names = (f"actual[{name!r}]", f"expected[{name!r}]")
        out[name] = _compare(actual[name], expected[name], rtol, atol, names=names)
    return NamedComparison(out)
