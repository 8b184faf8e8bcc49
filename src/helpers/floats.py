"""Bit-level views of floating-point numbers and summation in chosen orders.

Introduced in lesson ``01_floating_point_non_associativity``; ``round_mantissa``,
``round_to_format`` and ``matmul_error`` simulate TF32, bfloat16 and float16 inputs in lesson 03,
where ``gamma`` and ``matmul_error_bound`` give the matching error bound.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import torch

from helpers._validate import (
    check_int,
    check_real,
    check_sequence,
    check_str,
    check_tensor,
    checked_first,
    describe,
)
from helpers.tables import Table

__all__ = [
    "FORMATS",
    "INPUT_FORMATS",
    "FloatAnatomy",
    "TF32LinearFunction",
    "correctly_rounded_float32",
    "float_anatomy",
    "gamma",
    "matmul_error",
    "matmul_error_bound",
    "max_ulp_distance",
    "random_float32",
    "round_mantissa",
    "round_to_format",
    "round_to_nearest",
    "sum_exact",
    "sum_kahan",
    "sum_pairwise",
    "sum_sequential",
    "tf32_linear",
    "two_sum",
    "ulp",
    "ulp_distance",
    "unit_roundoff",
    "ULP_DISTANCE_CAP",
]

# dtype -> (exponent bits, explicit mantissa bits, integer dtype of the same width)
FORMATS: dict[torch.dtype, tuple[int, int, torch.dtype]] = {
    torch.float16: (5, 10, torch.int16),
    torch.bfloat16: (8, 7, torch.int16),
    torch.float32: (8, 23, torch.int32),
    torch.float64: (11, 52, torch.int64),
}
_NUMPY = {torch.float16: np.float16, torch.float32: np.float32, torch.float64: np.float64}


def _check_tensor(x: object, name: str = "x", *, values: bool = False) -> torch.Tensor:
    """A dense ``torch.Tensor``; with ``values``, one whose values can be read (not on the meta device)."""
    x = check_tensor(x, name)
    if x.layout != torch.strided:
        raise TypeError(f"{name} must be a dense tensor, got one with layout {x.layout}")
    if values and x.device.type == "meta":
        raise ValueError(f"{name} is on the meta device: it holds no values")
    return x


def _dtype_names(allowed: Iterable[torch.dtype]) -> str:
    return ", ".join(str(d).replace("torch.", "") for d in allowed)


def _check_float_dtype(
    dtype: object, allowed: Iterable[torch.dtype] = FORMATS, name: str = "dtype"
) -> torch.dtype:
    """A ``torch.dtype`` among ``allowed`` (TypeError otherwise: an unsupported dtype is a wrong kind)."""
    if not isinstance(dtype, torch.dtype):
        raise TypeError(f"{name} must be a torch.dtype such as torch.float32, got {describe(dtype)}")
    if dtype not in allowed:
        raise TypeError(f"{name} {dtype} is not supported here; use one of: {_dtype_names(allowed)}")
    return dtype


def _check_tensor_dtype(x: torch.Tensor, name: str, allowed: Iterable[torch.dtype] = FORMATS) -> torch.Tensor:
    """``x`` (already a tensor) has one of the ``allowed`` dtypes."""
    if x.dtype not in allowed:
        raise TypeError(
            f"{name} has dtype {x.dtype}, which is not supported here; use one of: {_dtype_names(allowed)}"
        )
    return x


def _check_format(fmt: object, allowed: Iterable[str], name: str = "fmt") -> str:
    """One of the format names ``allowed`` (the message keeps the words "unknown format")."""
    fmt = check_str(fmt, name)
    allowed = list(allowed)
    if fmt not in allowed:
        raise ValueError(f"{name} {fmt!r} is an unknown format; use one of: {', '.join(allowed)}")
    return fmt


def _check_positive_int(value: object, name: str, *, max: int | None = None) -> int:
    """An int >= 1 ("must be a positive int" stays in the message, as tests rely on it)."""
    number = check_int(value, name, max=max)
    if number < 1:
        raise ValueError(f"{name} must be a positive int, got {number}")
    return number


def _check_list_or_tuple(value: object, name: str) -> None:
    """A list or tuple (``check_sequence`` also lets a bytearray or a range through)."""
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"{name} must be a list or tuple, got {describe(value)}")


def _check_exact_number(value: object, name: str) -> int | float:
    """A Python ``int`` or ``float`` (numpy's float64 is one), never a bool; NaN and inf allowed."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be an int or a float, got {describe(value)}")
    return value


def _check_float_range(value: int | float, name: str) -> int | float:
    """``value`` (an int or float) unless it is an int of more than ``ANATOMY_MAX_INT_BITS`` bits.

    Every int beyond float64's range (2**1024) rounds to inf in every format and stays valid up to
    2**2048, whose 617 digits print under any int-to-str limit Python allows (at least 640 digits);
    a larger one (``2**100000``) would make the anatomy fail when shown.
    """
    if isinstance(value, int) and value.bit_length() > ANATOMY_MAX_INT_BITS:
        raise ValueError(
            f"{name} is an int of {value.bit_length()} bits, far beyond float64's range (2**1024): ints "
            f"of more than {ANATOMY_MAX_INT_BITS} bits are refused (too long to print); use math.inf "
            "for an infinite value"
        )
    return value


#: The longest int (in bits) ``float_anatomy`` takes: far beyond float64 (1024 bits), short enough
#: (617 digits) to print under any ``sys.set_int_max_str_digits`` limit (640 at least).
ANATOMY_MAX_INT_BITS = 2048


_KINDS = ("normal", "subnormal", "zero", "inf", "nan")


def _same_float(x: float, y: float) -> bool:
    """Equal as floating-point data: NaN matches NaN, and 0.0 does not match -0.0."""
    if math.isnan(x) or math.isnan(y):
        return math.isnan(x) and math.isnan(y)
    return x == y and math.copysign(1.0, x) == math.copysign(1.0, y)


@dataclass(frozen=True)
class FloatAnatomy:
    """The sign, exponent and mantissa fields of one floating-point value.

    Made by :func:`float_anatomy`. Built by hand, its fields are checked against each other:
    ``dtype`` one of ``FORMATS``; ``exponent_bits`` and ``mantissa_bits`` strings of 0s and 1s
    of ``dtype``'s widths; ``sign`` 0 or 1; ``bias`` ``dtype``'s exponent bias; ``kind`` the
    kind those bits encode ("normal", "subnormal", "zero", "inf" or "nan"); ``stored`` the value
    of the bits; and ``requested`` (an int or float) a number that rounds to ``stored``.

    Raises ``TypeError`` for a field of the wrong kind and ``ValueError`` for fields that
    disagree. Introduced in lesson 01.
    """

    dtype: torch.dtype
    requested: float | int
    stored: float
    sign: int
    exponent_bits: str
    mantissa_bits: str
    bias: int
    kind: str

    def __post_init__(self) -> None:
        dtype = _check_float_dtype(self.dtype)
        exp_width, man_width, _ = FORMATS[dtype]
        name = str(dtype).replace("torch.", "")
        requested = _check_float_range(_check_exact_number(self.requested, "requested"), "requested")
        try:
            stored = float(_check_exact_number(self.stored, "stored"))
        except OverflowError:
            raise ValueError(f"stored must be a value of {name}, got an int too large for a float") from None
        sign = check_int(self.sign, "sign", min=0, max=1)
        for field, width, what in (
            ("exponent_bits", exp_width, "exponent"),
            ("mantissa_bits", man_width, "stored mantissa"),
        ):
            bits = check_str(getattr(self, field), field)
            if len(bits) != width or set(bits) - {"0", "1"}:
                raise ValueError(
                    f"{field} must be {width} binary digits ({name}'s {what} width, from dtype), got {bits!r}"
                )
        bias = check_int(self.bias, "bias")
        if bias != (1 << (exp_width - 1)) - 1:
            raise ValueError(f"bias must be {(1 << (exp_width - 1)) - 1} for {name} (the dtype), got {bias}")
        kind = check_str(self.kind, "kind", choices=_KINDS)
        exponent, mantissa = int(self.exponent_bits, 2), int(self.mantissa_bits, 2)
        if exponent == (1 << exp_width) - 1:
            encoded = "nan" if mantissa else "inf"
        elif exponent == 0:
            encoded = "subnormal" if mantissa else "zero"
        else:
            encoded = "normal"
        if kind != encoded:
            raise ValueError(
                f"kind {kind!r} does not match exponent_bits {self.exponent_bits!r} and mantissa_bits "
                f"{self.mantissa_bits!r}, which encode a {encoded} value"
            )
        if encoded == "nan":
            value = math.nan
        elif encoded == "inf":
            value = math.inf
        else:  # exact: every value of the four formats is a float64
            significand = Fraction(mantissa, 1 << man_width) + (1 if encoded == "normal" else 0)
            value = float(significand * Fraction(2) ** (max(exponent, 1) - bias))
        value = -value if sign else value
        if not _same_float(stored, value):
            raise ValueError(
                f"stored {stored!r} is not the value of the bits sign={sign}, exponent_bits="
                f"{self.exponent_bits!r}, mantissa_bits={self.mantissa_bits!r} in {name}: they make {value!r}"
            )
        rounded = round_to_nearest(requested, dtype)
        if not _same_float(rounded, stored):
            raise ValueError(
                f"requested {requested!r} rounds to {rounded!r} in {name} (the dtype), "
                f"not to stored {stored!r}"
            )
        object.__setattr__(self, "stored", stored)  # frozen: the checked, normalised values
        object.__setattr__(self, "sign", sign)
        object.__setattr__(self, "bias", bias)

    @property
    def exponent(self) -> int | None:
        """The unbiased exponent (``None`` for zero, inf and NaN)."""
        raw = int(self.exponent_bits, 2)
        if self.kind == "normal":
            return raw - self.bias
        if self.kind == "subnormal":
            return 1 - self.bias
        return None

    @property
    def rounding_error(self) -> float:
        """``stored - requested``, computed exactly, then rounded to float64 (inf where ``stored`` is)."""
        if math.isfinite(self.stored) and (isinstance(self.requested, int) or math.isfinite(self.requested)):
            return float(Fraction(self.stored) - Fraction(self.requested))
        if not math.isfinite(self.stored) and isinstance(self.requested, int):
            return self.stored  # an int too large for dtype: the error is as infinite as the result
        return self.stored - self.requested

    def table(self) -> Table:
        """The fields as a :class:`helpers.tables.Table`."""
        name = str(self.dtype).replace("torch.", "")
        return Table(
            ["field", "bits", "meaning"],
            [
                ("sign", str(self.sign), "-" if self.sign else "+"),
                (
                    "exponent",
                    self.exponent_bits,
                    f"{self.kind}, 2^{self.exponent}" if self.exponent is not None else self.kind,
                ),
                ("mantissa", self.mantissa_bits, f"{len(self.mantissa_bits)} stored bits"),
                ("stored value", "", repr(self.stored)),
                ("rounding error", "", f"{self.rounding_error:.3e}"),
            ],
            title=f"{self.requested!r} as {name}",
        )

    def __str__(self) -> str:
        return str(self.table())

    __repr__ = __str__

    def _repr_html_(self) -> str:
        bits = (
            f"<span style='color:#c0392b'>{self.sign}</span> "
            f"<span style='color:#2471a3'>{self.exponent_bits}</span> "
            f"<span style='color:#229954'>{self.mantissa_bits}</span>"
        )
        return f"<div><code style='font-size:110%'>{bits}</code></div>" + self.table()._repr_html_()


def float_anatomy(value: float | torch.Tensor, dtype: torch.dtype = torch.float32) -> FloatAnatomy:
    """Split ``value``, rounded to ``dtype``, into its sign, exponent and mantissa bits.

    ``value`` is a Python number or a one-element tensor. It is rounded once, from its exact
    value, to the nearest ``dtype`` value (ties to even), as IEEE 754 prescribes; a Python ``int``
    (or an integer tensor) is taken exactly, not through float64, so ``2**80 + 2**56 + 1`` becomes
    ``2**80 + 2**57`` in float32 where ``float()`` would first have rounded it to ``2**80``.
    PyTorch's own float64 to float16 or bfloat16 conversion goes through float32 (``c10::Half`` and
    ``c10::BFloat16`` are built from a ``float``) and can round twice: in torch 2.13,
    ``torch.tensor(1 + 2**-11 + 2**-40, dtype=torch.float64).half()`` is 1.0, while the nearest
    float16 is 1.0009765625. Introduced in lesson 01.

    Raises ``TypeError`` for a ``value`` that is not an int, a float or a one-element real tensor
    (bools are refused), or a ``dtype`` that is not one of ``FORMATS``; ``ValueError`` for a tensor
    with more or fewer than one element, or one on the meta device, and for an int of more than
    ``ANATOMY_MAX_INT_BITS`` (2048) bits, far beyond float64's 1024, whose digits could not be
    printed (an int between 2**1024 and 2**2048 rounds to inf; pass ``math.inf`` for larger).
    """
    dtype = _check_float_dtype(dtype)
    if isinstance(value, torch.Tensor):
        value = _check_tensor(value, "value", values=True)
        if value.numel() != 1:
            raise ValueError(f"value must be one number; got a tensor of shape {tuple(value.shape)}")
        if value.dtype == torch.bool or value.is_complex() or value.is_quantized:
            raise TypeError(f"value must be a real number, got a {value.dtype} tensor")
        requested = float(value.double().item()) if value.is_floating_point() else int(value.item())
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        requested = _check_float_range(value, "value")
    else:
        raise TypeError(f"value must be a number or a one-element tensor, got {describe(value)}")
    exp_bits, man_bits, int_dtype = FORMATS[dtype]
    # exact once rounded: the float64 -> dtype conversion below changes nothing
    stored = torch.tensor(round_to_nearest(requested, dtype), dtype=torch.float64).to(dtype)
    width = 1 + exp_bits + man_bits
    raw = int(stored.view(int_dtype).item()) & ((1 << width) - 1)
    bits = format(raw, f"0{width}b")
    sign, exponent, mantissa = int(bits[0]), bits[1 : 1 + exp_bits], bits[1 + exp_bits :]
    if exponent == "1" * exp_bits:
        kind = "nan" if "1" in mantissa else "inf"
    elif exponent == "0" * exp_bits:
        kind = "subnormal" if "1" in mantissa else "zero"
    else:
        kind = "normal"
    bias = (1 << (exp_bits - 1)) - 1
    return FloatAnatomy(dtype, requested, float(stored.double().item()), sign, exponent, mantissa, bias, kind)


def round_to_nearest(value: float | int | Fraction, dtype: torch.dtype = torch.float32) -> float:
    """Round an exact number once to ``dtype``, to nearest with ties to even, as IEEE 754 does.

    ``value`` is a Python ``int``, ``float`` or ``fractions.Fraction``, taken exactly; the result is
    the ``dtype`` value nearest to it, returned as a Python float (which holds every value of the four
    formats exactly). Subnormal results, overflow to infinity and signed zeros follow IEEE 754
    (round to nearest, ties to even). Exact rational arithmetic makes this the reference for
    results that a chain of float roundings can get wrong: ``float_anatomy``'s conversions, and a
    fused multiply-add ``a * b + c`` rounded once. Introduced in lesson 01.

    Raises ``TypeError`` for any other ``value`` (bools and numpy integers included) or a
    ``dtype`` that is not one of ``FORMATS``.
    """
    dtype = _check_float_dtype(dtype)
    if isinstance(value, bool) or not isinstance(value, (int, float, Fraction)):
        raise TypeError(f"value must be an int, float or fractions.Fraction, got {describe(value)}")
    if isinstance(value, float) and not math.isfinite(value):
        return value
    exact = Fraction(value)
    negative = exact < 0 or (exact == 0 and math.copysign(1.0, float(value)) < 0)
    if exact == 0:
        return -0.0 if negative else 0.0
    exp_bits, man_bits, _ = FORMATS[dtype]
    bias = (1 << (exp_bits - 1)) - 1
    magnitude = abs(exact)
    # e with 2**e <= magnitude < 2**(e + 1)
    e = magnitude.numerator.bit_length() - magnitude.denominator.bit_length()
    if magnitude < Fraction(2) ** e:
        e -= 1
    quantum = Fraction(2) ** (max(e, 1 - bias) - man_bits)  # the spacing of dtype's values there
    rounded = round(magnitude / quantum) * quantum  # Fraction's round(): to nearest, ties to even
    largest = (2 - Fraction(2) ** -man_bits) * Fraction(2) ** bias
    result = math.inf if rounded > largest else float(rounded)
    return -result if negative else result


def ulp(x: torch.Tensor) -> torch.Tensor:
    """The unit in the last place of each element: the gap from ``|x|`` to the next float away from zero.

    Computed in ``x``'s own dtype, so ``ulp(torch.tensor(1.0))`` is float32's ``eps``.
    Introduced in lesson 01. Raises ``TypeError`` unless ``x`` is a tensor of one of ``FORMATS``.
    """
    x = _check_tensor_dtype(_check_tensor(x), "x")
    a = x.abs()
    return torch.nextafter(a, torch.full_like(a, math.inf)) - a


def _ordinal(x: torch.Tensor) -> torch.Tensor:
    """Map floats to integers that count representable values in order (-0.0 and +0.0 both map to 0)."""
    _, _, int_dtype = FORMATS[x.dtype]
    i = x.view(int_dtype).to(torch.int64)
    if x.dtype != torch.float64:
        width = 16 if int_dtype == torch.int16 else 32
        sign_bit = 1 << (width - 1)
        magnitude = i & (sign_bit - 1)
        return torch.where(i < 0, -magnitude, magnitude)
    magnitude = i & 0x7FFF_FFFF_FFFF_FFFF
    return torch.where(i < 0, -magnitude, magnitude)


def ulp_distance(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """How many representable values lie between each pair of elements (0 means equal, -0.0 == 0.0).

    Both tensors must have the same float dtype and shape (broadcasting is not applied, to catch
    mistakes); NaNs raise ``ValueError``. Returns int64. In float64 the distance between values of
    opposite sign can exceed int64 (up to about ``2**64``); such distances saturate at
    ``2**63 - 1`` (``ULP_DISTANCE_CAP``) instead of wrapping round. :func:`max_ulp_distance` gives
    the exact largest distance as a Python int. Introduced in lesson 01.

    Raises ``TypeError`` for non-tensors, dtypes outside ``FORMATS`` or two different dtypes, and
    ``ValueError`` for different shapes, NaNs or tensors on the meta device.
    """
    a, b = _check_ulp_pair(a, b, "ulp_distance")
    oa, ob = _ordinal(a), _ordinal(b)
    if a.dtype != torch.float64:
        return (oa - ob).abs()
    # Each ordinal's magnitude is below 2**63, but for opposite signs their sum may not be.
    opposite = ((oa > 0) & (ob < 0)) | ((oa < 0) & (ob > 0))
    ma, mb = oa.abs(), ob.abs()
    overflow = opposite & (ma > ULP_DISTANCE_CAP - mb)
    dist = torch.where(opposite, ma + mb, (oa - ob).abs())  # wrapped values are replaced below
    return torch.where(overflow, torch.full_like(dist, ULP_DISTANCE_CAP), dist)


ULP_DISTANCE_CAP = 2**63 - 1


def _check_ulp_pair(a: object, b: object, fn: str) -> tuple[torch.Tensor, torch.Tensor]:
    """The checks of :func:`ulp_distance`; returns both tensors detached, on the CPU."""
    a, b = _check_tensor(a, "a", values=True), _check_tensor(b, "b", values=True)
    _check_tensor_dtype(a, "a")
    _check_tensor_dtype(b, "b")
    if a.dtype != b.dtype:
        raise TypeError(f"a and b need one dtype for {fn}, got {a.dtype} and {b.dtype}; cast one first")
    if a.shape != b.shape:
        raise ValueError(
            f"a and b must have the same shape for {fn} (it does not broadcast), "
            f"got shapes {tuple(a.shape)} and {tuple(b.shape)}"
        )
    a, b = a.detach().cpu(), b.detach().cpu()
    for t, name in ((a, "a"), (b, "b")):
        if torch.isnan(t).any():
            raise ValueError(f"{name} holds NaN, and {fn} is undefined for NaN")
    return a, b


def max_ulp_distance(a: torch.Tensor, b: torch.Tensor) -> int:
    """The largest :func:`ulp_distance` between ``a`` and ``b``, exactly, as a Python int.

    Unlike :func:`ulp_distance` it does not saturate: float64 distances above ``2**63 - 1`` are
    returned exactly. Same checks as :func:`ulp_distance`; empty tensors give 0. Introduced in
    lesson 01.
    """
    a, b = _check_ulp_pair(a, b, "max_ulp_distance")
    oa, ob = _ordinal(a).flatten(), _ordinal(b).flatten()
    opposite = ((oa > 0) & (ob < 0)) | ((oa < 0) & (ob > 0))
    best = 0
    same = ~opposite
    if same.any():
        best = int((oa[same] - ob[same]).abs().max())
    if opposite.any():
        ma, mb = oa[opposite].abs(), ob[opposite].abs()
        # |a| + |b| as hi * 2**32 + lo with 0 <= lo < 2**32, so nothing overflows int64.
        lo = (ma & 0xFFFF_FFFF) + (mb & 0xFFFF_FFFF)
        hi = (ma >> 32) + (mb >> 32) + (lo >> 32)
        lo = lo & 0xFFFF_FFFF
        top = hi.max()
        best = max(best, int(top) * 2**32 + int(lo[hi == top].max()))
    return best


def correctly_rounded_float32(approx: torch.Tensor, margin: int = 4) -> tuple[torch.Tensor, torch.Tensor]:
    """Round float64 approximations of exact results to float32, and say where that is certain.

    ``approx`` holds float64 values, each within ``margin`` float64 ULPs of an exact result (a
    maths function evaluated in float64 by a library accurate to about 1 ULP, or ``a * b + c``
    evaluated in float64). Rounding it to float32 gives the correctly rounded float32 result
    unless the exact value lies on the other side of a rounding boundary, the midpoint between
    two float32 neighbours. Returns ``(rounded, certain)``: the float32 rounding, and a boolean
    tensor that is True where ``approx`` is more than ``margin`` float64 ULPs away from the nearest
    midpoint, so that the rounding is certainly the correctly rounded one. Introduced in lesson 01.

    Raises ``TypeError`` unless ``approx`` is a float64 tensor and ``margin`` an int, and
    ``ValueError`` for a negative ``margin`` (or one beyond int64).
    """
    approx = _check_tensor(approx, "approx")
    if approx.dtype != torch.float64:
        raise TypeError(f"approx must be a float64 tensor, got dtype {approx.dtype}")
    margin = check_int(margin, "margin")
    if not 0 <= margin <= 2**63 - 1:
        raise ValueError(f"margin must be a non-negative int (float64 ULPs) within int64, got {margin}")
    rounded = approx.float()  # one IEEE conversion: to nearest, ties to even
    r = rounded.double()
    up = torch.nextafter(rounded, torch.full_like(rounded, math.inf)).double()
    down = torch.nextafter(rounded, torch.full_like(rounded, -math.inf)).double()
    # the midpoint on approx's side of the float32 result (exact: 25 bits fit in float64)
    midpoint = torch.where(approx >= r, (r + up) / 2, (r + down) / 2)
    distance = (approx - midpoint).abs()
    finite = torch.isfinite(approx) & torch.isfinite(rounded) & torch.isfinite(midpoint)
    certain = finite & (distance > margin * ulp(approx))
    return rounded, certain


def random_float32(
    shape: tuple[int, ...], exponents: tuple[int, int] = (-20, 20), generator: torch.Generator | None = None
) -> torch.Tensor:
    """Random float32 numbers that use every bit of the format.

    Each has a random sign, 23 random stored mantissa bits and an exponent drawn uniformly from
    ``exponents`` (both ends included, within float32's normal range). Unlike the values of
    ``2 * torch.rand(n) - 1``, which lie on a grid of multiples of ``2**-23`` (so that the sum of
    two of them never rounds), these spread over many binades with full significands. They are
    assembled from random integers, not drawn with ``torch.randn``, whose values depend on the
    CPU's vector instructions (lesson 05). Introduced in lesson 01.

    ``shape`` is a tuple (or list) of non-negative ints, ``exponents`` a pair ``(low, high)`` with
    ``-126 <= low <= high <= 127``, ``generator`` a CPU ``torch.Generator`` or ``None`` (the
    global one). Raises ``TypeError`` for arguments of the wrong kind and ``ValueError`` for
    values out of range, including a ``shape`` of more than ``RANDOM_MAX_ELEMENTS`` (2**28)
    elements: the result alone would take 1 GiB, and its three int32 drafts 3 GiB more.
    """
    shape = _check_shape(shape, "shape")
    if math.prod(shape) > RANDOM_MAX_ELEMENTS:
        raise ValueError(
            f"shape {shape} has {math.prod(shape)} elements, more than random_float32 makes: at most "
            f"RANDOM_MAX_ELEMENTS = 2**28 (1 GiB of float32, plus 3 GiB of int32 drafts)"
        )
    _check_list_or_tuple(exponents, "exponents")
    low, high = check_sequence(exponents, "exponents", length=2, item_check=check_int)
    for i, e in enumerate((low, high)):
        if not -126 <= e <= 127:
            raise ValueError(
                f"exponents[{i}] must be one of float32's normal exponents, -126 to 127, got {e}"
            )
    if low > high:
        raise ValueError(f"exponents must be an ordered pair (low, high) with low <= high, got {exponents!r}")
    if generator is not None:
        if not isinstance(generator, torch.Generator):
            raise TypeError(f"generator must be a torch.Generator or None, got {describe(generator)}")
        if generator.device.type != "cpu":
            raise ValueError(f"generator must be a CPU generator, got one for {generator.device}")
    mantissa = torch.randint(0, 1 << 23, shape, generator=generator, dtype=torch.int32)
    exponent = torch.randint(low + 127, high + 128, shape, generator=generator, dtype=torch.int32)
    negative = torch.randint(0, 2, shape, generator=generator, dtype=torch.int32).bool()
    x = ((exponent << 23) | mantissa).view(torch.float32)
    return torch.where(negative, -x, x)


#: The most elements :func:`random_float32` makes at once (1 GiB of float32).
RANDOM_MAX_ELEMENTS = 2**28


def _check_shape(shape: object, name: str) -> tuple[int, ...]:
    """A tuple or list of non-negative ints whose product fits in int64, as a tuple."""
    _check_list_or_tuple(shape, name)
    dims = tuple(check_sequence(shape, name, item_check=lambda d, n: check_int(d, n, min=0)))
    if math.prod(dims) > 2**63 - 1:
        raise ValueError(f"{name} {dims} has too many elements for one tensor")
    return dims


def two_sum(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Knuth's TwoSum: ``s = a + b`` rounded, and ``err`` with ``s + err == a + b`` exactly.

    Six additions in ``a``'s own dtype recover exactly what the rounding of ``a + b`` lost (Knuth,
    *The Art of Computer Programming*, vol. 2, section 4.2.2, Theorem B; Higham, section 4.3),
    provided nothing overflows. ``err == 0`` exactly where ``a + b`` was exact. Introduced in
    lesson 01.

    ``a`` and ``b`` are tensors of one dtype of ``FORMATS`` whose shapes broadcast, on one
    device. Raises ``TypeError`` or ``ValueError`` otherwise.
    """
    a, b = _check_tensor(a, "a"), _check_tensor(b, "b")
    _check_tensor_dtype(a, "a")
    _check_tensor_dtype(b, "b")
    if a.dtype != b.dtype:
        raise TypeError(f"a and b need one dtype for two_sum, got {a.dtype} and {b.dtype}")
    _check_broadcast(a, b)
    s = a + b
    b_virtual = s - a
    a_virtual = s - b_virtual
    return s, (a - a_virtual) + (b - b_virtual)


def _check_broadcast(a: torch.Tensor, b: torch.Tensor) -> None:
    """``a`` and ``b`` can meet in an elementwise operation: shapes that broadcast, on one device."""
    try:
        torch.broadcast_shapes(a.shape, b.shape)
    except RuntimeError:
        raise ValueError(
            f"a and b have shapes {tuple(a.shape)} and {tuple(b.shape)}, which do not broadcast"
        ) from None
    cpu_scalar = (a.dim() == 0 and a.device.type == "cpu") or (b.dim() == 0 and b.device.type == "cpu")
    if a.device != b.device and not cpu_scalar:
        raise ValueError(f"a and b must be on one device, got {a.device} and {b.device}")


def round_mantissa(x: torch.Tensor, bits: int, ties: str = "even") -> torch.Tensor:
    """Round a float32 tensor to ``bits`` explicit mantissa bits, to the nearest value.

    The exponent range stays float32's, so ``bits=10`` simulates TF32 inputs and ``bits=7``
    matches ``x.to(torch.bfloat16).float()``. A value exactly halfway between two neighbours goes
    to the one with an even last bit (``ties="even"``, IEEE 754's default) or to the one further
    from zero (``ties="away"``, the rule of NVIDIA's ``cvt.rna.tf32.f32`` instruction). NaN and inf
    pass through. Introduced in lesson 01, used in lesson 03.

    Raises ``TypeError`` unless ``x`` is a float32 tensor, ``bits`` an int and ``ties`` a str, and
    ``ValueError`` for ``bits`` outside 0..23 or another ``ties``.
    """
    x = _check_float32(x, "x", "round_mantissa")
    bits = check_int(bits, "bits")
    if not 0 <= bits <= 23:
        raise ValueError(f"bits must be between 0 and 23 (float32 stores 23), got {bits}")
    ties = check_str(ties, "ties", choices=("even", "away"))
    if bits == 23:
        return x.clone()
    drop = 23 - bits
    # Work on the unsigned bit pattern: the sign bit is untouched, and a carry out of the
    # mantissa correctly bumps the exponent (the largest floats round up to inf).
    u = x.contiguous().view(torch.int32).to(torch.int64) & 0xFFFF_FFFF
    half = 1 << (drop - 1)
    if ties == "even":
        out = ((u + half - 1 + ((u >> drop) & 1)) >> drop) << drop
    else:
        out = ((u + half) >> drop) << drop
    out = torch.where(out >= 1 << 31, out - (1 << 32), out).to(torch.int32).view(torch.float32)
    return torch.where(torch.isfinite(x), out, x).reshape(x.shape)


def _check_float32(x: object, name: str, fn: str) -> torch.Tensor:
    x = _check_tensor(x, name)
    if x.dtype != torch.float32:
        raise TypeError(f"{name} must be a float32 tensor for {fn}, got dtype {x.dtype}")
    return x


# format name -> how float32 inputs are rounded before a tensor-core style product
INPUT_FORMATS = ("float32", "tf32", "bfloat16", "float16")


def round_to_format(x: torch.Tensor, fmt: str) -> torch.Tensor:
    """Round float32 values to what ``fmt`` can hold, returned as float32.

    ``fmt`` is one of ``"float32"`` (unchanged), ``"tf32"`` (10 mantissa bits, ties away from zero,
    as the GPU converts), ``"bfloat16"`` or ``"float16"`` (PyTorch's own conversions, so float16
    also overflows beyond 65504). Introduced in lesson 03.

    Raises ``TypeError`` unless ``x`` is a float32 tensor and ``fmt`` a str, ``ValueError`` for an
    unknown format.
    """
    x = _check_float32(x, "x", "round_to_format")
    fmt = _check_format(fmt, INPUT_FORMATS)
    if fmt == "float32":
        return x.clone()
    if fmt == "tf32":
        return round_mantissa(x, 10, ties="away")
    if fmt == "bfloat16":
        return x.to(torch.bfloat16).float()
    return x.to(torch.float16).float()


def unit_roundoff(fmt: str) -> float:
    """Half the gap between 1.0 and the next value of ``fmt``: the largest relative rounding error.

    ``fmt`` is one of "float32", "tf32", "bfloat16", "float16" or "float64"; raises ``TypeError``
    for a non-string and ``ValueError`` for another name. Introduced in lesson 03.
    """
    bits = {"float32": 23, "tf32": 10, "bfloat16": 7, "float16": 10, "float64": 52}
    fmt = _check_format(fmt, bits)
    return 2.0 ** -(bits[fmt] + 1)


class TF32LinearFunction(torch.autograd.Function):
    """``F.linear`` whose three matrix products all take operands rounded to TF32.

    On a GPU with TF32 enabled, PyTorch allows cuBLAS to use TF32 operands in every float32
    matrix-matrix product (matrix-vector products and some linear algebra switch it off); whether a
    given product does is cuBLAS's choice. A linear layer runs three: its forward ``x @ W.T`` and
    both products of its backward pass, ``grad @ W`` (the input's gradient) and ``grad.T @ x`` (the
    weight's). This stand-in takes the extreme case and rounds the operands of all three with
    :func:`round_to_format`, then multiplies in float32 on the CPU, so it shows what the rounding
    does, not the GPU's order of the sums. The bias gradient is a plain sum and stays float32.
    Introduced in lesson 10; call it through :func:`tf32_linear`.
    """

    @staticmethod
    def forward(ctx, x, weight, bias):
        _check_linear(x, weight, bias)
        x32, w32 = round_to_format(x, "tf32"), round_to_format(weight, "tf32")
        ctx.save_for_backward(x32, w32)
        return torch.nn.functional.linear(x32, w32, bias)

    @staticmethod
    def backward(ctx, grad):
        x32, w32 = ctx.saved_tensors
        g32 = round_to_format(grad, "tf32")                        # the incoming gradient, rounded too
        g_rows, x_rows = g32.reshape(-1, g32.shape[-1]), x32.reshape(-1, x32.shape[-1])  # batch dims flat
        grad_x = g32 @ w32 if ctx.needs_input_grad[0] else None
        grad_w = g_rows.T @ x_rows if ctx.needs_input_grad[1] else None
        grad_b = grad.reshape(-1, grad.shape[-1]).sum(0) if ctx.needs_input_grad[2] else None
        return grad_x, grad_w, grad_b


def tf32_linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """``torch.nn.functional.linear(x, weight, bias)`` with TF32 operands, forward and backward.

    See :class:`TF32LinearFunction`. ``x`` (``(..., in_features)``), ``weight``
    (``(out_features, in_features)``) and ``bias`` (``(out_features,)`` or ``None``) must be float32
    tensors on one device; raises ``TypeError`` or ``ValueError`` otherwise, before any work.
    Introduced in lesson 10.
    """
    _check_linear(x, weight, bias)
    return TF32LinearFunction.apply(x, weight, bias)


def _check_linear(x: object, weight: object, bias: object) -> None:
    """The arguments of :func:`tf32_linear`: float32 tensors whose shapes fit ``F.linear``."""
    x = _check_float32(x, "x", "tf32_linear")
    weight = _check_float32(weight, "weight", "tf32_linear")
    if bias is not None:
        if not isinstance(bias, torch.Tensor):
            raise TypeError(f"bias must be a torch.Tensor or None, got {describe(bias)}")
        bias = _check_float32(bias, "bias", "tf32_linear")
    if x.dim() < 1:
        raise ValueError(f"x must have at least 1 dimension (its features last), got shape {tuple(x.shape)}")
    if weight.dim() != 2:
        raise ValueError(f"weight must be 2-D, (out_features, in_features), got shape {tuple(weight.shape)}")
    if x.shape[-1] != weight.shape[1]:
        raise ValueError(
            f"x's last dimension ({x.shape[-1]}) must equal weight's in_features ({weight.shape[1]}); "
            f"got shapes {tuple(x.shape)} and {tuple(weight.shape)}"
        )
    if bias is not None and tuple(bias.shape) != (weight.shape[0],):
        raise ValueError(
            f"bias must have shape ({weight.shape[0]},), one entry per output feature of weight, "
            f"got {tuple(bias.shape)}"
        )
    devices = {t.device for t in (x, weight, bias) if t is not None}
    if len(devices) > 1:
        raise ValueError(f"x, weight and bias must be on one device, got {', '.join(map(str, devices))}")


MATMUL_DATA = ("normal", "positive", "cancelling")
#: The most elements ``matmul_error``'s inputs may have (``m * k``): its float64 copies and
#: products take several GiB at this size.
MATMUL_MAX_ELEMENTS = 2**28
#: The most entries of ``matmul_error``'s (m x m) result, ``m * m``: about five float64 (m x m)
#: tensors are alive at once (3 GiB at this size).
MATMUL_MAX_OUTPUT = 2**26
#: The most multiply-adds ``m * m * k`` of one ``matmul_error`` product: it computes three
#: products of this size in float32 and float64, about 15 s on two CPU cores at this size.
MATMUL_MAX_PRODUCTS = 2**37


def matmul_error(
    fmt: str | Callable[[torch.Tensor], torch.Tensor],
    k: int,
    m: int = 64,
    seed: int = 0,
    data: str = "normal",
) -> dict[str, float]:
    """Errors of an (m x k) @ (k x m) product whose inputs are rounded to ``fmt``.

    A model of the *input rounding* of a tensor-core product, not of the hardware: the rounded
    inputs are multiplied and summed by the CPU's float32 matrix product (IEEE 754 arithmetic, in
    the library's order), while tensor cores add in their own, non-IEEE way (lesson 03, section
    3.3). The result is compared with the float64 product of the unrounded inputs. ``fmt`` is a
    format name of :func:`round_to_format`, or a function that rounds a float32 tensor itself and
    returns a float32 tensor of the same shape (lesson 03 passes one that truncates to TF32).

    ``data`` chooses the inputs, drawn on the CPU from ``seed``: ``"normal"`` (independent standard
    normal, zero mean; drawn in float64 and rounded to float32), ``"positive"`` (uniform in
    [0, 1)) or ``"cancelling"`` (standard normal ``a``; ``b`` projected in float64 so that
    ``a @ b`` is zero up to float32 rounding; needs ``k > m``). Returns:

    - ``"rel_fro"``: ``||error||_F / ||C||_F``, the relative error in the Frobenius norm (the
      square root of the sum of the squares of all entries);
    - ``"max_rel"``: the largest error over the largest entry of ``C``;
    - ``"max_over_mean"``: the largest error over the mean of ``|C|`` (the measure of PyTorch's
      CUDA notes for their A100 example);
    - ``"rel_to_products"``: ``||error||_F / ||P||_F`` with ``P_ij = sqrt(sum_k (a_ik b_kj)^2)``,
      the size of the products an entry adds up: about ``0.6 u`` for any data (lesson 03).

    Raises ``TypeError`` for arguments of the wrong kind (``fmt`` neither a format name nor
    callable, ``k``, ``m`` or ``seed`` not ints, ``data`` not a str), and ``ValueError`` for an
    unknown format or data, ``k`` or ``m`` below 1, sizes beyond the caps (``m * k`` above
    ``MATMUL_MAX_ELEMENTS`` = 2**28, ``m * m`` above ``MATMUL_MAX_OUTPUT`` = 2**26, ``m * m * k``
    above ``MATMUL_MAX_PRODUCTS`` = 2**37: the memory and time these take), a ``seed`` outside
    ``torch.Generator.manual_seed``'s range, or cancelling data with ``k <= m``. All before any
    data is drawn. A ``fmt`` function that fails, or returns anything but a dense float32 CPU
    tensor of its input's shape, gives a ``TypeError`` naming ``fmt``; one that returns inf or NaN
    (the inputs are finite and far from overflow) a ``ValueError`` naming ``fmt``.

    Introduced in lesson 03.
    """
    if isinstance(fmt, str):
        _check_format(fmt, INPUT_FORMATS)
    elif not callable(fmt):
        raise TypeError(
            f"fmt must be a format name ({', '.join(INPUT_FORMATS)}) or a function that rounds a "
            f"float32 tensor, got {describe(fmt)}"
        )
    k, m = _check_positive_int(k, "k"), _check_positive_int(m, "m")
    if m * k > MATMUL_MAX_ELEMENTS:
        raise ValueError(
            f"m * k = {m} * {k} is too large: at most {MATMUL_MAX_ELEMENTS} (2**28) elements per input"
        )
    if m * m > MATMUL_MAX_OUTPUT:
        raise ValueError(
            f"m = {m} is too large: the (m x m) product's m * m = {m * m} entries must be at most "
            f"MATMUL_MAX_OUTPUT = {MATMUL_MAX_OUTPUT} (2**26; several float64 copies are kept)"
        )
    if m * m * k > MATMUL_MAX_PRODUCTS:
        raise ValueError(
            f"m * m * k = {m} * {m} * {k} multiply-adds is too much work: at most MATMUL_MAX_PRODUCTS = "
            f"{MATMUL_MAX_PRODUCTS} (2**37, about 15 s on two CPU cores); make m or k smaller"
        )
    seed = check_int(seed, "seed", min=-(2**63), max=2**64 - 1)
    data = check_str(data, "data")
    if data not in MATMUL_DATA:
        raise ValueError(f"data {data!r} is unknown data; use one of: {', '.join(MATMUL_DATA)}")
    if data == "cancelling" and k <= m:
        raise ValueError(
            f"cancelling data needs k > m (got k={k}, m={m}): b is projected onto a's null space"
        )
    g = torch.Generator().manual_seed(seed)
    if data == "positive":
        a, b = torch.rand(m, k, generator=g), torch.rand(k, m, generator=g)
    else:  # float32 randn's vectorised path depends on the CPU capability (lesson 05); float64's did not here
        a = torch.randn(m, k, generator=g, dtype=torch.float64).float()
        b = torch.randn(k, m, generator=g, dtype=torch.float64).float()
    if data == "cancelling":  # b - a^T (a a^T)^-1 a b: every column of b orthogonal to every row of a
        a64, b64 = a.double(), b.double()
        b = (b64 - a64.T @ torch.linalg.solve(a64 @ a64.T, a64 @ b64)).float()
    exact = a.double() @ b.double()
    got = (_round_with(fmt, a) @ _round_with(fmt, b)).double()
    diff = (got - exact).abs()
    products = ((a.double() ** 2) @ (b.double() ** 2)).sqrt()
    return {
        "rel_fro": (diff.norm() / exact.norm()).item(),
        "max_rel": (diff.max() / exact.abs().max()).item(),
        "max_over_mean": (diff.max() / exact.abs().mean()).item(),
        "rel_to_products": (diff.norm() / products.norm()).item(),
    }


def _round_with(fmt: str | Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    if not callable(fmt):
        return round_to_format(x, fmt)
    try:
        out = fmt(x.clone())
    except Exception as err:  # a function that cannot take a float32 tensor: say which argument it was
        raise TypeError(
            f"fmt, called with a float32 tensor of shape {tuple(x.shape)}, raised {type(err).__name__}: {err}"
        ) from err
    if (
        not isinstance(out, torch.Tensor)
        or out.is_nested
        or out.layout != torch.strided
        or out.dtype != torch.float32
        or out.shape != x.shape
        or out.device != x.device
    ):
        layout = f" with layout {out.layout}" if isinstance(out, torch.Tensor) and not out.is_nested else ""
        raise TypeError(
            f"fmt, a rounding function, must return a float32 tensor (dense, on the CPU) of its input's "
            f"shape {tuple(x.shape)}; it returned {describe(out)}{layout}"
        )
    if not bool(torch.isfinite(out).all()):
        raise ValueError(
            f"fmt, a rounding function, returned inf or NaN for finite float32 input of shape "
            f"{tuple(x.shape)}; the errors would be NaN"
        )
    return out.detach()


def gamma(k: int, u: float) -> float:
    """Higham's ``gamma_k = k u / (1 - k u)``: the bound on the relative error of ``k`` roundings.

    ``(1 + d_1)...(1 + d_k)`` with every ``|d_i| <= u`` lies within ``gamma_k`` of 1 (Higham,
    *Accuracy and Stability of Numerical Algorithms*, Lemma 3.1), provided ``k u < 1``. For
    ``k u >= 1`` the formula divides by zero or turns negative, so this raises ``ValueError``: that
    happens when the unit roundoff of a short format is put where the accumulation's belongs
    (``k = 2048`` with ``u = 2**-11``). Introduced in lesson 03.

    Also raises ``TypeError`` for a ``k`` that is not an int or a ``u`` that is not a real number,
    and ``ValueError`` for a negative ``k`` (or one beyond int64) or a ``u`` outside [0, 1).
    """
    k = check_int(k, "k")
    if not 0 <= k <= 2**63 - 1:
        shown = k if abs(k) < 10**30 else f"an int of {len(str(abs(k)))} digits"
        raise ValueError(f"k must be a non-negative int (a count of roundings) within int64, got {shown}")
    u = check_real(u, "u")
    if not 0 <= u < 1:
        raise ValueError(f"u must be a unit roundoff in [0, 1), got {u!r}")
    if k * u >= 1:
        raise ValueError(
            f"gamma_k is only defined for k * u < 1, got k = {k}, u = {u:.3g} (k * u = {k * u:.3g}); "
            "the unit roundoff of rounded inputs belongs in u_in, not in the accumulation's gamma_k"
        )
    return k * u / (1 - k * u)


def matmul_error_bound(a: torch.Tensor, b: torch.Tensor, u_in: float, u_acc: float) -> torch.Tensor:
    """Entry-by-entry bound on ``|computed a @ b - exact a @ b|``, as a float64 tensor.

    For inputs rounded to a format with unit roundoff ``u_in`` (``0`` when they are used as they
    are) and ``k`` products added in any order with additions that round to nearest with unit
    roundoff ``u_acc``::

        (2 u_in + u_in**2 + gamma_k(u_acc) (1 + u_in)**2) * (|a| @ |b|)

    Each rounded input is ``x (1 + d)`` with ``|d| <= u_in``, and an inner product of ``k`` terms
    carries a factor within ``gamma_k(u_acc)`` of 1 per term (Higham, section 3.1), so each term's
    relative error is at most ``(1 + u_in)**2 (1 + gamma_k) - 1``. ``a`` and ``b`` are the
    unrounded inputs; ``k`` is ``a``'s last dimension. Introduced in lesson 03.

    Both ``|d| <= u`` steps assume no underflow or overflow: every nonzero input lies in the input
    format's normal range (for float16, ``6.1e-5 <= |x| <= 65504``) and every product and partial
    sum in the accumulation format's. A float16 subnormal keeps fewer bits, so its relative error
    can far exceed ``u_in``: ``a = [[4e-8, 1e-6]]``, ``b = [[1], [1]]`` in float16 are off by
    3.3e-8, against a bound of 1.0e-9.

    Raises ``TypeError`` unless ``a`` and ``b`` are real (not complex or bool) tensors and
    ``u_in``, ``u_acc`` real numbers; ``ValueError`` for shapes ``a @ b`` cannot take, inf or NaN in
    ``a`` or ``b``, a unit roundoff outside [0, 1), or ``k * u_acc >= 1``.
    """
    a, b = _check_tensor(a, "a"), _check_tensor(b, "b")
    if a.dim() < 1 or b.dim() < 1 or a.shape[-1] != b.shape[0 if b.dim() == 1 else -2]:
        raise ValueError(f"shapes {tuple(a.shape)} and {tuple(b.shape)} cannot be multiplied")
    if not 0 <= u_in < 1:
        raise ValueError(f"u_in must be a unit roundoff in [0, 1), got {u_in!r}")
    factor = 2 * u_in + u_in**2 + gamma(a.shape[-1], u_acc) * (1 + u_in) ** 2
    return factor * (a.detach().cpu().double().abs() @ b.detach().cpu().double().abs())


def _check_bound_arguments(a: object, b: object, u_in: object, u_acc: object) -> None:
    """The checks of :func:`matmul_error_bound`, run first by ``checked_first`` (lesson 03 shows its body)."""
    a, b = _check_tensor(a, "a", values=True), _check_tensor(b, "b", values=True)
    for t, name in ((a, "a"), (b, "b")):
        if t.is_complex() or t.dtype == torch.bool:
            raise TypeError(f"{name} must hold real numbers, got dtype {t.dtype}")
        check_tensor(t, name, finite=True)
    try:
        torch.matmul(torch.empty(a.shape, device="meta"), torch.empty(b.shape, device="meta"))
    except RuntimeError:
        raise ValueError(
            f"a and b: shapes {tuple(a.shape)} and {tuple(b.shape)} cannot be multiplied"
        ) from None
    u_in = check_real(u_in, "u_in")
    if not 0 <= u_in < 1:
        raise ValueError(f"u_in must be a unit roundoff in [0, 1), got {u_in!r}")
    u_acc = check_real(u_acc, "u_acc")
    if not 0 <= u_acc < 1:
        raise ValueError(f"u_acc must be a unit roundoff in [0, 1), got {u_acc!r}")
    k = a.shape[-1]
    if k * u_acc >= 1:
        raise ValueError(
            f"u_acc = {u_acc:.3g} is too large for k = {k} products (a's last dimension): gamma_k needs "
            f"k * u_acc < 1; the unit roundoff of rounded inputs belongs in u_in, not in u_acc"
        )


# Lesson 03 prints the body of matmul_error_bound (and nbval compares it): its checks run first,
# outside the printed body.
matmul_error_bound = checked_first(matmul_error_bound, _check_bound_arguments)


#: The most elements the sums below take: ``sum_sequential``, ``sum_pairwise`` and ``sum_kahan``
#: make float copies of ``x`` (1 GiB of float32 at this size, twice that for ``sum_pairwise``'s padding).
SUM_MAX_ELEMENTS = 2**28
#: The longest last dimension ``sum_kahan`` takes: its Python loop runs once per element of it
#: (about 3 s at this size).
KAHAN_MAX_LENGTH = 2**24
#: The most elements ``sum_exact`` takes: it turns each into a Python float (about 1 GiB and
#: 2 s at this size).
EXACT_MAX_ELEMENTS = 2**25


class SumOverflowError(OverflowError, ValueError):
    """An exact sum too large for float64: an ``OverflowError`` that is also a ``ValueError``."""


def _check_sum_input(
    x: object, fn: str, max_elements: int = SUM_MAX_ELEMENTS, max_length: int | None = None
) -> torch.Tensor:
    """A float16, float32 or float64 tensor with a non-empty last dimension, detached, on the CPU.

    Raises ``TypeError`` for anything else, ``ValueError`` for an empty last dimension, a 0-d
    tensor, one on the meta device, or one larger than ``max_elements`` (or whose last dimension
    is longer than ``max_length``): an expanded tensor can claim 2**40 elements in no memory.
    """
    x = _check_tensor_dtype(_check_tensor(x, "x", values=True), "x", _NUMPY)
    if x.dim() == 0 or x.shape[-1] == 0:
        raise ValueError(
            f"nothing to sum: x must have a last dimension that is not empty, got shape {tuple(x.shape)}"
        )
    if x.numel() > max_elements:
        raise ValueError(
            f"x has {x.numel()} elements (shape {tuple(x.shape)}), more than {fn} takes: at most "
            f"{max_elements} (2**{max_elements.bit_length() - 1}), for the memory and time it needs"
        )
    if max_length is not None and x.shape[-1] > max_length:
        raise ValueError(
            f"x's last dimension has {x.shape[-1]} elements, more than {fn}'s Python loop takes: at most "
            f"{max_length} (2**{max_length.bit_length() - 1}, a few seconds)"
        )
    return x.detach().cpu()


def sum_sequential(x: torch.Tensor) -> torch.Tensor:
    """Sum along the last dimension strictly left to right, rounding after every addition.

    This is what a plain ``for`` loop does, in ``x``'s own dtype (float16, float32 or float64).
    Introduced in lesson 01.

    ``x`` must be a float16, float32 or float64 tensor with a non-empty last dimension
    (``TypeError`` or ``ValueError`` otherwise), of at most ``SUM_MAX_ELEMENTS`` (2**28) elements.
    """
    x = _check_sum_input(x, "sum_sequential")
    arr = x.numpy()
    # ufunc.accumulate is sequential by definition (unlike np.sum, which is pairwise).
    return torch.from_numpy(np.add.accumulate(arr, axis=-1, dtype=arr.dtype)[..., -1].copy())


def sum_pairwise(x: torch.Tensor) -> torch.Tensor:
    """Sum along the last dimension as a balanced binary tree (adjacent pairs, level by level).

    This is the order a parallel reduction uses. Padding with zeros to a power of two changes
    nothing because adding zero is exact. Introduced in lesson 01.

    ``x`` must be a float16, float32 or float64 tensor with a non-empty last dimension
    (``TypeError`` or ``ValueError`` otherwise), of at most ``SUM_MAX_ELEMENTS`` (2**28) elements.
    """
    x = _check_sum_input(x, "sum_pairwise")
    n = x.shape[-1]
    size = 1 << (n - 1).bit_length()
    level = torch.nn.functional.pad(x, (0, size - n)) if size != n else x.clone()
    while level.shape[-1] > 1:
        level = level[..., 0::2] + level[..., 1::2]
    return level[..., 0]


def sum_kahan(x: torch.Tensor) -> torch.Tensor:
    """Kahan's compensated sum along the last dimension, in ``x``'s own dtype.

    A second variable carries the low-order bits that each addition loses. Introduced in lesson 01.

    ``x`` must be a float16, float32 or float64 tensor with a non-empty last dimension
    (``TypeError`` or ``ValueError`` otherwise), of at most ``SUM_MAX_ELEMENTS`` (2**28) elements
    and a last dimension of at most ``KAHAN_MAX_LENGTH`` (2**24: a Python loop runs along it).
    """
    x = _check_sum_input(x, "sum_kahan", max_length=KAHAN_MAX_LENGTH)
    arr = np.moveaxis(x.numpy(), -1, 0)
    total = np.zeros(arr.shape[1:], dtype=arr.dtype)
    carry = np.zeros_like(total)
    for value in arr:
        y = value - carry
        t = total + y
        carry = (t - total) - y
        total = t
    return torch.from_numpy(np.asarray(total))


def sum_exact(x: torch.Tensor) -> torch.Tensor:
    """The exact sum along the last dimension, correctly rounded to float64 (``math.fsum``).

    The reference every other order is measured against. Introduced in lesson 01.

    ``x`` must be a float16, float32 or float64 tensor with a non-empty last dimension, finite
    values and at most ``EXACT_MAX_ELEMENTS`` (2**25) elements, each of which becomes a Python
    float (``TypeError`` or ``ValueError`` otherwise). A row whose exact sum is beyond float64's
    range raises :class:`SumOverflowError`, both an ``OverflowError`` and a ``ValueError``.
    """
    x = _check_sum_input(x, "sum_exact", max_elements=EXACT_MAX_ELEMENTS)
    if not torch.isfinite(x).all():
        raise ValueError("sum_exact needs finite values: x holds inf or NaN")
    rows = x.double().reshape(-1, x.shape[-1]).tolist()
    sums = []
    for i, row in enumerate(rows):
        try:
            sums.append(_fsum(row))
        except OverflowError:
            where = f"x's row {i} (of {len(rows)}, the last dimension flattened)" if len(rows) > 1 else "x"
            raise SumOverflowError(
                f"the exact sum of {where} is too large for float64 (beyond about 1.8e308)"
            ) from None
    return torch.tensor(sums, dtype=torch.float64).reshape(x.shape[:-1])


def _fsum(row: list[float]) -> float:
    """``math.fsum``, falling back to exact rational arithmetic when a partial sum overflows.

    ``math.fsum([1e308, 1e308, -1e308])`` raises ``OverflowError`` although the exact sum is
    representable; ``float(Fraction)`` rounds correctly and raises ``OverflowError`` only if the
    exact sum itself is too large for float64.
    """
    try:
        return math.fsum(row)
    except OverflowError:
        total = sum((Fraction(v) for v in row), Fraction(0))
        try:
            return float(total)
        except OverflowError:
            raise OverflowError("the exact sum is too large for float64") from None
