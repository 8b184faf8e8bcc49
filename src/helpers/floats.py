"""Bit-level views of floating-point numbers and summation in chosen orders.

Introduced in lesson ``01_floating_point_non_associativity``; ``round_mantissa``,
``round_to_format`` and ``matmul_error`` simulate TF32, bfloat16 and float16 inputs in lesson 03,
where ``gamma`` and ``matmul_error_bound`` give the matching error bound.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import torch

from helpers.show.tables import Table

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


@dataclass(frozen=True)
class FloatAnatomy:
    """The sign, exponent and mantissa fields of one floating-point value, made by :func:`float_anatomy`.

    ``kind`` is "normal", "subnormal", "zero", "inf" or "nan"; ``stored`` is the value of the
    bits and ``requested`` the number that was rounded to it. Introduced in lesson 01.
    """

    dtype: torch.dtype
    requested: float | int
    stored: float
    sign: int
    exponent_bits: str
    mantissa_bits: str
    bias: int
    kind: str

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
        """The fields as a :class:`helpers.show.tables.Table`."""
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

    ``value`` is a Python number or a one-element tensor; ``dtype`` one of ``FORMATS``. It is
    rounded once, from its exact value, to the nearest ``dtype`` value (ties to even), as IEEE 754
    prescribes; a Python ``int`` (or an integer tensor) is taken exactly, not through float64, so
    ``2**80 + 2**56 + 1`` becomes ``2**80 + 2**57`` in float32 where ``float()`` would first have
    rounded it to ``2**80``. PyTorch's own float64 to float16 or bfloat16 conversion goes through
    float32 (``c10::Half`` and ``c10::BFloat16`` are built from a ``float``) and can round twice:
    in torch 2.13, ``torch.tensor(1 + 2**-11 + 2**-40, dtype=torch.float64).half()`` is 1.0, while
    the nearest float16 is 1.0009765625. Introduced in lesson 01.
    """
    if isinstance(value, torch.Tensor):
        value = float(value.double().item()) if value.is_floating_point() else int(value.item())
    exp_bits, man_bits, int_dtype = FORMATS[dtype]
    # exact once rounded: the float64 -> dtype conversion below changes nothing
    stored = torch.tensor(round_to_nearest(value, dtype), dtype=torch.float64).to(dtype)
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
    return FloatAnatomy(dtype, value, float(stored.double().item()), sign, exponent, mantissa, bias, kind)


def round_to_nearest(value: float | int | Fraction, dtype: torch.dtype = torch.float32) -> float:
    """Round an exact number once to ``dtype``, to nearest with ties to even, as IEEE 754 does.

    ``value`` is a Python ``int``, ``float`` or ``fractions.Fraction``, taken exactly; the result is
    the ``dtype`` value nearest to it, returned as a Python float (which holds every value of the four
    formats exactly). Subnormal results, overflow to infinity and signed zeros follow IEEE 754
    (round to nearest, ties to even). Exact rational arithmetic makes this the reference for
    results that a chain of float roundings can get wrong: ``float_anatomy``'s conversions, and a
    fused multiply-add ``a * b + c`` rounded once. Introduced in lesson 01.
    """
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
    Introduced in lesson 01.
    """
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

    Both tensors have one dtype of ``FORMATS``, the same shape and no NaN. Returns int64. In
    float64 the distance between values of opposite sign can exceed int64 (up to about ``2**64``);
    such distances saturate at ``2**63 - 1`` (``ULP_DISTANCE_CAP``) instead of wrapping round.
    :func:`max_ulp_distance` gives the exact largest distance as a Python int. Introduced in lesson 01.
    """
    a, b = a.detach().cpu(), b.detach().cpu()
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


def max_ulp_distance(a: torch.Tensor, b: torch.Tensor) -> int:
    """The largest :func:`ulp_distance` between ``a`` and ``b``, exactly, as a Python int.

    Unlike :func:`ulp_distance` it does not saturate: float64 distances above ``2**63 - 1`` are
    returned exactly. Empty tensors give 0. Introduced in lesson 01.
    """
    a, b = a.detach().cpu(), b.detach().cpu()
    if a.numel() == 0:
        return 0
    oa, ob = _ordinal(a).flatten(), _ordinal(b).flatten()
    if a.dtype != torch.float64:  # ordinals below 2**31 in size: no difference overflows int64
        return int((oa - ob).abs().max())
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
    """
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
    CPU's vector instructions (lesson 05). ``exponents`` is ``(low, high)`` with
    ``-126 <= low <= high <= 127``; ``generator`` a CPU generator or ``None`` (the global one).
    Introduced in lesson 01.
    """
    low, high = exponents
    mantissa = torch.randint(0, 1 << 23, shape, generator=generator, dtype=torch.int32)
    exponent = torch.randint(low + 127, high + 128, shape, generator=generator, dtype=torch.int32)
    negative = torch.randint(0, 2, shape, generator=generator, dtype=torch.int32).bool()
    x = ((exponent << 23) | mantissa).view(torch.float32)
    return torch.where(negative, -x, x)


def two_sum(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Knuth's TwoSum: ``s = a + b`` rounded, and ``err`` with ``s + err == a + b`` exactly.

    Six additions in ``a``'s own dtype recover exactly what the rounding of ``a + b`` lost (Knuth,
    *The Art of Computer Programming*, vol. 2, section 4.2.2, Theorem B; Higham, section 4.3),
    provided nothing overflows and ``a`` and ``b`` share a dtype. ``err == 0`` exactly where
    ``a + b`` was exact. Introduced in lesson 01.
    """
    s = a + b
    b_virtual = s - a
    a_virtual = s - b_virtual
    return s, (a - a_virtual) + (b - b_virtual)


def round_mantissa(x: torch.Tensor, bits: int, ties: str = "even") -> torch.Tensor:
    """Round a float32 tensor to ``bits`` explicit mantissa bits, to the nearest value.

    The exponent range stays float32's, so ``bits=10`` simulates TF32 inputs and ``bits=7``
    matches ``x.to(torch.bfloat16).float()``. A value exactly halfway between two neighbours goes
    to the one with an even last bit (``ties="even"``, IEEE 754's default) or to the one further
    from zero (``ties="away"``, the rule of NVIDIA's ``cvt.rna.tf32.f32`` instruction). NaN and inf
    pass through. ``bits`` is 0 to 23. Introduced in lesson 01, used in lesson 03.
    """
    if ties not in ("even", "away"):
        raise ValueError(f"ties must be 'even' or 'away', got {ties!r}")
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


# format name -> how float32 inputs are rounded before a tensor-core style product
INPUT_FORMATS = ("float32", "tf32", "bfloat16", "float16")


def round_to_format(x: torch.Tensor, fmt: str) -> torch.Tensor:
    """Round float32 values to what ``fmt`` can hold, returned as float32.

    ``fmt`` is one of ``"float32"`` (unchanged), ``"tf32"`` (10 mantissa bits, ties away from zero,
    as the GPU converts), ``"bfloat16"`` or ``"float16"`` (PyTorch's own conversions, so float16
    also overflows beyond 65504). Introduced in lesson 03.
    """
    if fmt not in INPUT_FORMATS:
        raise ValueError(f"fmt {fmt!r} is an unknown format; use one of: {', '.join(INPUT_FORMATS)}")
    if fmt == "float32":
        return x.clone()
    if fmt == "tf32":
        return round_mantissa(x, 10, ties="away")
    if fmt == "bfloat16":
        return x.to(torch.bfloat16).float()
    return x.to(torch.float16).float()


def unit_roundoff(fmt: str) -> float:
    """Half the gap between 1.0 and the next value of ``fmt``: the largest relative rounding error.

    ``fmt`` is one of "float32", "tf32", "bfloat16", "float16" or "float64". Introduced in lesson 03.
    """
    bits = {"float32": 23, "tf32": 10, "bfloat16": 7, "float16": 10, "float64": 52}
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
    (``(out_features, in_features)``) and ``bias`` (``(out_features,)`` or ``None``) are float32
    tensors on one device. Introduced in lesson 10.
    """
    return TF32LinearFunction.apply(x, weight, bias)


MATMUL_DATA = ("normal", "positive", "cancelling")


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

    Introduced in lesson 03.
    """
    if data not in MATMUL_DATA:
        raise ValueError(f"data {data!r} is unknown data; use one of: {', '.join(MATMUL_DATA)}")
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
    return round_to_format(x, fmt) if isinstance(fmt, str) else fmt(x.clone())


def gamma(k: int, u: float) -> float:
    """Higham's ``gamma_k = k u / (1 - k u)``: the bound on the relative error of ``k`` roundings.

    ``(1 + d_1)...(1 + d_k)`` with every ``|d_i| <= u`` lies within ``gamma_k`` of 1 (Higham,
    *Accuracy and Stability of Numerical Algorithms*, Lemma 3.1), provided ``k u < 1``. For
    ``k u >= 1`` the formula divides by zero or turns negative, so this raises ``ValueError``: that
    happens when the unit roundoff of a short format is put where the accumulation's belongs
    (``k = 2048`` with ``u = 2**-11``). Introduced in lesson 03.
    """
    if k * u >= 1:
        raise ValueError(
            f"gamma_k is only defined for k * u < 1, got k = {k}, u = {u:.3g} (k * u = {k * u:.3g}); "
            "the unit roundoff of rounded inputs belongs in u_in, not in the accumulation's gamma_k"
        )
    return k * u / (1 - k * u)


# Lesson 10 prints this function's body, and nbval compares it.
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
    """
    factor = 2 * u_in + u_in**2 + gamma(a.shape[-1], u_acc) * (1 + u_in) ** 2
    return factor * (a.detach().cpu().double().abs() @ b.detach().cpu().double().abs())


def sum_sequential(x: torch.Tensor) -> torch.Tensor:
    """Sum along the last dimension strictly left to right, rounding after every addition.

    This is what a plain ``for`` loop does, in ``x``'s own dtype (float16, float32 or float64).
    Introduced in lesson 01.
    """
    x = x.detach().cpu()
    arr = x.numpy()
    # ufunc.accumulate is sequential by definition (unlike np.sum, which is pairwise).
    return torch.from_numpy(np.add.accumulate(arr, axis=-1, dtype=arr.dtype)[..., -1].copy())


def sum_pairwise(x: torch.Tensor) -> torch.Tensor:
    """Sum along the last dimension as a balanced binary tree (adjacent pairs, level by level).

    This is the order a parallel reduction uses. Padding with zeros to a power of two changes
    nothing because adding zero is exact. Introduced in lesson 01.
    """
    x = x.detach().cpu()
    n = x.shape[-1]
    size = 1 << (n - 1).bit_length()
    level = torch.nn.functional.pad(x, (0, size - n)) if size != n else x.clone()
    while level.shape[-1] > 1:
        level = level[..., 0::2] + level[..., 1::2]
    return level[..., 0]


def sum_kahan(x: torch.Tensor) -> torch.Tensor:
    """Kahan's compensated sum along the last dimension, in ``x``'s own dtype.

    A second variable carries the low-order bits that each addition loses. Introduced in lesson 01.
    """
    x = x.detach().cpu()
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

    The reference every other order is measured against. A row whose exact sum is beyond
    float64's range raises ``OverflowError``. Introduced in lesson 01.
    """
    rows = x.detach().cpu().double().reshape(-1, x.shape[-1]).tolist()
    return torch.tensor([_fsum(row) for row in rows], dtype=torch.float64).reshape(x.shape[:-1])


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
