"""Debugging a mismatch: find the first module of a model that diverges.

``first_divergence`` runs two copies of a model and names the first module whose output differs by
more than the difference of its input explains. Introduced in lesson 12 (debugging a mismatch).
"""

from __future__ import annotations

import math
import numbers
import re
import weakref
from collections.abc import Mapping
from dataclasses import dataclass

import torch

from helpers.compare import reduction_tolerances
from helpers.floats import FORMATS, max_ulp_distance
from helpers.show.tables import Table

__all__ = ["Divergence", "first_divergence"]

ROOT = "(model)"  # the name first_divergence gives the model itself (named_modules() calls it "")


@dataclass(frozen=True)
class Divergence:
    """What :func:`first_divergence` found. Introduced in lesson 12.

    ``module`` is the qualified name (as ``named_modules()`` gives it; ``"(model)"`` for the model
    itself) of the first module whose output differs by more than its input's difference explains;
    for a difference made in a module's own code between the calls it makes,
    ``"<parent> (its own code, before <call>)"`` or ``"(model) (its own code)"``; None when
    nothing diverges. ``table`` has one row per module call, in the order the calls
    finished (a container after the modules it ran): module, type, output shape, K, max rel error,
    max ULP, tolerance, verdict.
    """

    module: str | None
    table: Table

    def __str__(self) -> str:
        found = "no module diverges" if self.module is None else f"first divergence: {self.module}"
        return f"{self.table}\n{found}"

    __repr__ = __str__

    def _repr_html_(self) -> str:
        found = "no module diverges" if self.module is None else f"first divergence: <b>{self.module}</b>"
        return f"{self.table._repr_html_()}<p>{found}</p>"


def _prod(values) -> int:
    return math.prod(int(v) for v in values)


def _spatial_dims(module: torch.nn.Module) -> int:
    """1, 2 or 3 for a module whose class name ends in 1d, 2d or 3d (1 otherwise)."""
    match = re.search(r"([123])d$", type(module).__name__)
    return int(match.group(1)) if match else 1


def _first_tensor(args: tuple) -> torch.Tensor | None:
    return next((a for a in args if isinstance(a, torch.Tensor)), None)


def _softmax_dim(module: torch.nn.Module, x: torch.Tensor) -> int:
    """The dim a Softmax, LogSoftmax or Softmin normalises: its ``dim``, or for ``dim=None``
    ``torch.nn.functional``'s legacy rule (``F._get_softmax_dim``: 0 for 0-, 1- and 3-D inputs,
    else 1)."""
    if module.dim is not None:
        return module.dim
    return 0 if x.dim() in (0, 1, 3) else 1


def _batch_statistics(module: torch.nn.Module) -> bool:
    """True when a batch or instance norm normalises with the statistics of its input."""
    return module.training or not module.track_running_stats or module.running_mean is None


#: Modules whose output entries each come from one input entry (or a fixed few): K = 1.
_ELEMENTWISE_MODULES = (
    "torch.nn.modules.dropout", "torch.nn.modules.flatten", "torch.nn.modules.padding",
    "torch.nn.modules.pixelshuffle", "torch.nn.modules.channelshuffle", "torch.nn.modules.container",
)
_ELEMENTWISE_TYPES = (
    torch.nn.Identity, torch.nn.Embedding, torch.nn.modules.pooling._MaxPoolNd,
    torch.nn.modules.pooling._AdaptiveMaxPoolNd, torch.nn.modules.pooling._MaxUnpoolNd,
)
#: Containers whose own code only adds what their children return (residual connections): K = 1.
_ADDING_CONTAINERS = (
    torch.nn.Transformer, torch.nn.TransformerEncoder, torch.nn.TransformerDecoder,
    torch.nn.TransformerEncoderLayer, torch.nn.TransformerDecoderLayer,
)
_SOFTMAXES = (torch.nn.Softmax, torch.nn.LogSoftmax, torch.nn.Softmin)


def _known_elementwise(module: torch.nn.Module) -> bool:
    """True for activations (other than attention and the softmaxes), dropout, reshaping, padding,
    max pooling, embedding lookups, plain containers and the transformer containers."""
    nn = torch.nn
    kind = type(module)
    if kind.__module__ == "torch.nn.modules.activation":
        return not isinstance(module, (nn.MultiheadAttention, nn.Softmax2d, *_SOFTMAXES))
    known = (*_ELEMENTWISE_TYPES, *_ADDING_CONTAINERS)
    return kind.__module__ in _ELEMENTWISE_MODULES or isinstance(module, known)


def _sequence_length(x: torch.Tensor | None, batch_first: bool) -> int:
    """The time (or sequence) dimension's length of an RNN's or attention's input: dim 1 of a 3-D
    input when ``batch_first``, else dim 0 (also of an unbatched 2-D one; for a PackedSequence's
    data, its total number of items, an upper bound)."""
    if x is None or x.dim() == 0:
        return 1
    return int(x.shape[1]) if batch_first and x.dim() == 3 else int(x.shape[0])


def _unknown_length(module: torch.nn.Module, args: tuple) -> int:
    """A generous K for a module ``first_divergence`` does not know: as if its code summed along
    every dimension of its largest floating input in turn, and then over the fan-in
    (``numel / shape[0]``) of each of its own parameters of two or more dimensions."""
    floats = [t for t in args if t.is_floating_point() and t.dim() > 0]
    k = sum(int(s) for s in max(floats, key=torch.Tensor.numel).shape) if floats else 0
    k += sum(p.numel() // p.shape[0] for p in module.parameters(recurse=False) if p.dim() >= 2 and p.shape[0])
    return max(1, k)


def _reduction_length(
    module: torch.nn.Module, args: tuple, output: torch.Tensor, query_key: tuple | None = None
) -> int:
    """How many terms each output element of ``module`` sums (its K), along its longest chain of
    sums; 1 for elementwise modules, and a generous bound for modules it does not know."""
    nn = torch.nn
    x = _first_tensor(args)
    if isinstance(module, nn.Linear):
        return module.in_features
    if isinstance(module, nn.Bilinear):
        return module.in1_features * module.in2_features
    if isinstance(module, nn.modules.conv._ConvNd):
        return module.in_channels // module.groups * _prod(module.kernel_size)
    if isinstance(module, (nn.LayerNorm, nn.RMSNorm)) and module.normalized_shape:
        return _prod(module.normalized_shape)
    if isinstance(module, nn.GroupNorm) and x is not None and x.dim() >= 2:
        return module.num_channels // module.num_groups * _prod(x.shape[2:])
    if isinstance(module, nn.modules.instancenorm._InstanceNorm) and x is not None:
        return _prod(x.shape[-_spatial_dims(module):])
    if isinstance(module, nn.modules.batchnorm._BatchNorm) and x is not None and x.dim() >= 2:
        if _batch_statistics(module):  # statistics of this batch
            return max(1, x.numel() // x.shape[1])
        return 1
    if isinstance(module, _SOFTMAXES) and x is not None and x.dim() > 0:
        return int(x.shape[_softmax_dim(module, x)])
    if isinstance(module, nn.Softmax2d) and x is not None and x.dim() >= 3:
        return int(x.shape[-3])
    if isinstance(module, (nn.modules.pooling._AvgPoolNd, nn.modules.pooling._LPPoolNd)):
        size = module.kernel_size
        return _prod(size) if isinstance(size, (tuple, list)) else int(size) ** _spatial_dims(module)
    if isinstance(module, nn.modules.pooling._AdaptiveAvgPoolNd) and x is not None:
        n = _spatial_dims(module)
        return max(1, -(-_prod(x.shape[-n:]) // max(1, _prod(output.shape[-n:]))))  # ceil(in / out)
    if isinstance(module, nn.MultiheadAttention):
        # the query's projection, its dot products with the keys, the softmax over the keys, the
        # weighted sum of the values, and the output projection, one after another
        key = query_key[1] if query_key else x
        s = _sequence_length(key, module.batch_first)
        return max(module.embed_dim, module.kdim, module.vdim) + module.head_dim + 2 * s + module.embed_dim
    if isinstance(module, nn.RNNBase):
        # each step sums the layer's input and its previous hidden state; a step's error reaches
        # every later step, and each layer's reaches the next
        t = _sequence_length(x, module.batch_first)
        hidden = module.proj_size or module.hidden_size
        directions = 2 if module.bidirectional else 1
        inputs = [module.input_size] + [directions * hidden] * (module.num_layers - 1)
        return sum(t * (n + hidden) + (module.hidden_size if module.proj_size else 0) for n in inputs)
    if isinstance(module, nn.modules.rnn.RNNCellBase):
        return module.input_size + module.hidden_size
    if isinstance(module, nn.EmbeddingBag) and module.mode != "max" and x is not None:
        return max(1, int(x.shape[-1]) if x.dim() == 2 else x.numel())  # the longest bag, at most
    if isinstance(module, nn.modules.upsampling.Upsample):
        return 2 ** max(1, x.dim() - 2) if x is not None else 1  # linear interpolation: 2 per dim
    if _known_elementwise(module):
        return 1
    return _unknown_length(module, args)


def _condition(module: torch.nn.Module, args: tuple, query_key: tuple | None = None) -> float:
    """How much ``module`` may amplify the relative error of its input and of its own first steps.

    A softmax turns an absolute error d of a logit into a relative error of about d in its output,
    so its input's relative error grows by up to the largest ``|input|``; a norm that subtracts the
    mean turns a relative error of its input into one ``|mean| / std`` times larger in its output
    (LayerNorm, GroupNorm, and InstanceNorm or BatchNorm using the batch's statistics). At least
    1; 1 for every other module.
    """
    nn = torch.nn
    x = _first_tensor(args)
    if x is None or not x.is_floating_point() or x.numel() == 0:
        return 1.0
    if isinstance(module, nn.MultiheadAttention):
        return _attention_condition(module, *query_key) if query_key else 1.0
    x = x.detach().to(torch.float64)
    groups = None
    if isinstance(module, (nn.Softmax, nn.LogSoftmax, nn.Softmin)):
        finite = x[torch.isfinite(x)]
        c = float(finite.abs().max()) if finite.numel() else 1.0
        return c if math.isfinite(c) and c > 1.0 else 1.0
    if isinstance(module, nn.LayerNorm) and module.normalized_shape:
        groups = x.reshape(-1, _prod(module.normalized_shape))
    elif isinstance(module, nn.GroupNorm) and x.dim() >= 2:
        groups = x.reshape(x.shape[0], module.num_groups, -1).flatten(0, 1)
    elif isinstance(module, nn.modules.instancenorm._InstanceNorm) and _batch_statistics(module):
        groups = x.reshape(-1, _prod(x.shape[-_spatial_dims(module):]))
    elif isinstance(module, nn.modules.batchnorm._BatchNorm) and x.dim() >= 2 and _batch_statistics(module):
        groups = x.transpose(0, 1).reshape(x.shape[1], -1)
    if groups is None or groups.numel() == 0:
        return 1.0
    eps = float(getattr(module, "eps", 0.0) or 0.0)
    mean = groups.mean(dim=1)
    std = (groups.var(dim=1, unbiased=False) + eps).sqrt()
    ratio = (mean.abs() / std).nan_to_num(nan=1.0, posinf=1.0)
    c = float(ratio.max())
    return c if math.isfinite(c) and c > 1.0 else 1.0


def _attention_condition(
    module: torch.nn.MultiheadAttention, query: torch.Tensor, key: torch.Tensor
) -> float:
    """The largest ``|score|`` of ``module``'s softmax (at least 1), computed from its inputs and
    weights: the softmax inside attention turns a relative error of a score into one up to
    ``|score|`` times larger in its output. Masks are ignored (so the bound is an upper one);
    one item and one head are scored at a time, to bound the memory it takes."""
    e, h, d = module.embed_dim, module.num_heads, module.head_dim
    if module._qkv_same_embed_dim:
        w_q, w_k = module.in_proj_weight[:e], module.in_proj_weight[e : 2 * e]
    else:
        w_q, w_k = module.q_proj_weight, module.k_proj_weight
    bias = module.in_proj_bias
    b_q, b_k = (None, None) if bias is None else (bias[:e], bias[e : 2 * e])
    batch_dim = 0 if module.batch_first else 1
    if query.dim() == 2:  # unbatched
        query, key, batch_dim = query.unsqueeze(0), key.unsqueeze(0), 0
    worst = 1.0
    with torch.no_grad():
        for qi, ki in zip(query.unbind(batch_dim), key.unbind(batch_dim), strict=False):
            q = torch.nn.functional.linear(qi.double(), w_q.double(), None if b_q is None else b_q.double())
            k = torch.nn.functional.linear(ki.double(), w_k.double(), None if b_k is None else b_k.double())
            q, k = q.reshape(-1, h, d).transpose(0, 1), k.reshape(-1, h, d).transpose(0, 1)
            for qh, kh in zip(q, k, strict=True):
                scores = (qh @ kh.T) / math.sqrt(d)
                finite = scores[torch.isfinite(scores)]
                if finite.numel():
                    worst = max(worst, float(finite.abs().max()))
    return worst


def _tensors(value: object) -> list[torch.Tensor]:
    """The tensors in ``value``, a tensor or a (nested) tuple, list or dict of them."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    if isinstance(value, Mapping):
        return [t for v in value.values() for t in _tensors(v)]
    return []


@dataclass
class _Call:
    """One forward call of one module, recorded by the hooks."""

    name: str
    module: torch.nn.Module
    start: int  # when the call started (a counter of the starts and ends of calls)
    inputs: list[torch.Tensor]
    outputs: list[torch.Tensor] | None = None  # the tensors in its output
    end: int = -1  # when it finished, on the same counter
    query_key: tuple[torch.Tensor, torch.Tensor] | None = None  # an attention's query and key


def _module_names(model: torch.nn.Module) -> list[tuple[str, torch.nn.Module]]:
    """Each module once, named by all its names: ``"enc = dec"`` for a module registered twice."""
    names: dict[int, list[str]] = {}
    modules: dict[int, torch.nn.Module] = {}
    for name, module in model.named_modules(remove_duplicate=False):
        if module is model:
            names[id(module)] = [ROOT]
        elif names.get(id(module)) != [ROOT]:
            names.setdefault(id(module), []).append(name)
        modules.setdefault(id(module), module)
    return [(" = ".join(names[key]), module) for key, module in modules.items()]


def _run_recorded(model: torch.nn.Module, inputs: tuple, kwargs: dict) -> list[_Call]:
    """Run ``model(*inputs, **kwargs)`` with hooks on every module; the calls in the order they finished.

    Inputs are cloned when a call starts, before any hook the caller registered (which may cast
    them: that belongs to the module), and outputs after the caller's hooks, so that an in-place
    module later in the model cannot overwrite them. Runs without gradients; hooks are removed and
    buffers put back (a BatchNorm in training mode updates its statistics) even on error.
    """
    finished: list[_Call] = []
    stack: list[_Call] = []
    counter = [0]
    copies: dict[int, tuple] = {}  # id(output) -> (weak reference to it, its version, its copy)

    def copy_of(t: torch.Tensor) -> torch.Tensor:
        """The copy of an earlier output if ``t`` is that output, unchanged since; else a new copy."""
        known = copies.get(id(t))
        if known is not None and known[0]() is t and known[1] == t._version:
            return known[2]
        if t.is_nested:  # nn.TransformerEncoder's path for padded sequences: compared padded with 0
            return t.detach().to_padded_tensor(0.0)
        return t.detach().clone()

    def before(name):
        def hook(module, args, kwargs):
            originals = _tensors(args) + _tensors(kwargs)
            copied = {id(t): copy_of(t) for t in originals}  # a tensor passed twice is copied once
            call = _Call(name, module, counter[0], [copied[id(t)] for t in originals])
            if isinstance(module, torch.nn.MultiheadAttention):
                query = args[0] if args else kwargs.get("query")
                key = args[1] if len(args) > 1 else kwargs.get("key", query)
                if isinstance(query, torch.Tensor) and isinstance(key, torch.Tensor):
                    call.query_key = (copied[id(query)], copied[id(key)])
            stack.append(call)
            counter[0] += 1

        return hook

    def after(module, args, kwargs, output):
        call = stack.pop()
        call.outputs = [copy_of(t) for t in _tensors(output)]
        for t, c in zip(_tensors(output), call.outputs, strict=True):
            copies[id(t)] = (weakref.ref(t), t._version, c)
        call.end = counter[0]
        counter[0] += 1
        finished.append(call)

    handles = []
    saved = [(buf, buf.detach().clone()) for buf in model.buffers()]
    try:
        for name, module in _module_names(model):
            pre = module.register_forward_pre_hook(before(name), prepend=True, with_kwargs=True)
            handles += [pre, module.register_forward_hook(after, with_kwargs=True)]
        with torch.no_grad():
            model(*inputs, **kwargs)
    finally:
        for handle in handles:
            handle.remove()
        with torch.no_grad():  # a forward call in training mode updates BatchNorm's statistics
            for buf, value in saved:
                buf.copy_(value)
    return finished


#: The seed each model's run starts from, so that two identical models draw the same random numbers.
RUN_SEED = 0


def _cuda_indices(model: torch.nn.Module, inputs: list[torch.Tensor]) -> list[int]:
    """The CUDA devices the model's tensors and its inputs are on."""
    indices = set()
    for t in [*model.parameters(), *model.buffers(), *inputs]:
        if t.device.type == "cuda":
            indices.add(t.device.index if t.device.index is not None else torch.cuda.current_device())
    return sorted(indices)


def _run_seeded(model: torch.nn.Module, inputs: tuple, kwargs: dict) -> list[_Call]:
    """``_run_recorded`` from ``RUN_SEED`` on the CPU and each CUDA device used, in a fork of the
    random state: the caller's random numbers are neither consumed nor reseeded."""
    devices = _cuda_indices(model, _tensors(inputs) + _tensors(kwargs))
    with torch.random.fork_rng(devices=devices):
        torch.random.default_generator.manual_seed(RUN_SEED)
        for index in devices:  # only the forked devices: torch.manual_seed would reseed them all
            with torch.cuda.device(index):
                torch.cuda.manual_seed(RUN_SEED)
        return _run_recorded(model, inputs, kwargs)


def _placement(model: torch.nn.Module) -> tuple[torch.device, torch.dtype | None]:
    """The device of the model's first parameter or buffer, and the dtype of its first floating one."""
    tensors = list(model.parameters()) + list(model.buffers())
    device = tensors[0].device if tensors else torch.device("cpu")
    dtype = next((t.dtype for t in tensors if t.is_floating_point()), None)
    return device, dtype


def _moved(value: object, model: torch.nn.Module, memo: dict | None = None) -> object:
    """A copy of ``value`` for ``model``: its tensors (also in a tuple, list or dict) on the model's
    device, floating ones in its dtype, so that an in-place operation in it changes neither the
    caller's tensors nor the other model's inputs; anything else unchanged. A tensor given twice
    gets one copy (``attn(x, x, x)`` stays self-attention, whose fast path checks ``query is key``)."""
    memo = {} if memo is None else memo
    device, dtype = _placement(model)
    if isinstance(value, torch.Tensor):
        if id(value) not in memo:
            if dtype is not None and value.is_floating_point():
                memo[id(value)] = value.detach().to(device=device, dtype=dtype).clone()
            else:
                memo[id(value)] = value.detach().to(device).clone()
        return memo[id(value)]
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a named tuple (PackedSequence)
        return type(value)(*(_moved(v, model, memo) for v in value))
    if isinstance(value, (tuple, list)):
        return type(value)(_moved(v, model, memo) for v in value)
    if isinstance(value, Mapping):
        return {key: _moved(v, model, memo) for key, v in value.items()}
    return value


def _real(t: torch.Tensor) -> torch.Tensor:
    """A complex tensor as its real and imaginary parts; any other unchanged."""
    return torch.view_as_real(t.resolve_conj()) if t.is_complex() else t


def _error(
    a: torch.Tensor, b: torch.Tensor, device: torch.device
) -> tuple[float, torch.Tensor | None, torch.Tensor | None]:
    """``(e, |a - b|, |a|)`` in float64, with ``e = max |a - b| / (|a| + scale)``; ``(0.0, None,
    None)`` for equal tensors.

    ``scale = max(mean |a|, mean |b|, tiny)`` over the finite entries, ``tiny`` being the smallest
    normal number of the coarser dtype: relative to each entry plus the typical entry, so entries
    near zero (where a relative error means little) are judged on the scale of the others, as
    lesson 10's ``atol = rtol * scale`` does: ``e`` is the smallest rtol that passes with that
    atol. An all-zero reference is judged on the scale of the other side. Entries that are NaN or
    infinite in one and not equal in the other count as an infinite error.
    """
    if a.dtype == b.dtype and a.device == b.device and torch.equal(a, b):
        return 0.0, None, None
    floating = a.is_floating_point() and b.is_floating_point()
    tiny = torch.finfo(_coarser(a.dtype, b.dtype)).tiny if floating else 0.0
    a64 = a.detach().to(device=device, dtype=torch.float64)
    b64 = b.detach().to(device=device, dtype=torch.float64)
    if a64.numel() and bool(torch.isfinite(a64).all()) and bool(torch.isfinite(b64).all()):
        diff, size = (a64 - b64).abs_(), a64.abs()
        scale = max(tiny, float(size.mean()), float(b64.abs().mean()))
        return float((diff / (size + scale)).max()), diff, size
    same = (a64 == b64) | (torch.isnan(a64) & torch.isnan(b64))
    diff = torch.where(same, torch.zeros_like(a64), (a64 - b64).abs())
    diff = torch.nan_to_num(diff, nan=math.inf, posinf=math.inf)
    size = a64.abs()
    scale = tiny
    for side in (size, b64.abs()):
        finite = torch.isfinite(side)
        if bool(finite.any()):
            scale = max(scale, float(side[finite].mean()))
    denom = torch.nan_to_num(size, posinf=0.0) + scale
    rel = torch.where(diff == 0, torch.zeros_like(diff), diff / denom)
    rel = torch.nan_to_num(rel, nan=math.inf, posinf=math.inf)
    return (float(rel.max()) if rel.numel() else 0.0), diff, size


def _memo_error(x: torch.Tensor, y: torch.Tensor, device: torch.device, memo: dict) -> float:
    """``_error(x, y)[0]``, computed once for each pair of recorded tensors (an input recorded as
    the same tensor as an earlier output, see ``_run_recorded``, is not compared twice)."""
    key = (id(x), id(y))
    if key not in memo:  # the pair is kept with its error, so that no other tensor takes its ids
        memo[key] = (_error(x, y, device)[0], x, y)
    return memo[key][0]


def _incoming_error(a: _Call, b: _Call, device: torch.device, memo: dict) -> float:
    """The largest error ``e`` among the call's tensor inputs (infinite when they do not pair up)."""
    if len(a.inputs) != len(b.inputs):
        return math.inf
    worst = 0.0
    for x, y in zip(a.inputs, b.inputs, strict=True):
        x, y = _real(x), _real(y)
        if x.shape != y.shape:
            return math.inf
        if x.is_floating_point() and y.is_floating_point():
            if x.numel():
                worst = max(worst, _memo_error(x, y, device, memo))
        elif not torch.equal(x.cpu(), y.cpu()):
            return math.inf
    return worst


def _input_dtype(a: _Call, b: _Call) -> torch.dtype | None:
    """The coarser dtype of the first floating inputs of the two calls."""
    x = next((t for t in a.inputs if t.is_floating_point()), None)
    y = next((t for t in b.inputs if t.is_floating_point()), None)
    return None if x is None or y is None else _coarser(x.dtype, y.dtype)


def _coarser(x: torch.dtype, y: torch.dtype) -> torch.dtype:
    return max((x, y), key=lambda d: torch.finfo(d).eps)


def _own_tolerance(dtype: torch.dtype, k: int, safety: float) -> float:
    if dtype in FORMATS:
        return reduction_tolerances(dtype, k, safety=safety)[0]
    return safety * torch.finfo(dtype).eps / 2 * math.sqrt(k)  # a format compare has no defaults for


def _max_ulp(a: torch.Tensor, b: torch.Tensor, dtype: torch.dtype) -> int | None:
    if dtype not in FORMATS:
        return None
    x, y = a.detach().cpu().to(dtype), b.detach().cpu().to(dtype)
    if x.numel() == 0 or bool(torch.isnan(x).any() or torch.isnan(y).any()):
        return None
    return max_ulp_distance(x, y)


def _shape(t: torch.Tensor) -> str:
    return "(" + ", ".join(str(s) for s in t.shape) + ")"


def _shapes(tensors: list[torch.Tensor]) -> str:
    return ", ".join(_shape(t) for t in tensors)


def _compare(
    xs: list[torch.Tensor], ys: list[torch.Tensor], tol: float, atol: float | None, device: torch.device,
    memo: dict,
) -> tuple[float, bool, int | None]:
    """``(e, passed, max ULP)`` over paired tensors of equal shapes: ``e`` is the largest error;
    integer and bool tensors must be equal."""
    worst, ok, ulps = 0.0, True, []
    for x, y in zip(xs, ys, strict=True):
        if not (x.is_floating_point() and y.is_floating_point()):
            equal = x.dtype == y.dtype and torch.equal(x.cpu(), y.cpu())
            worst, ok = (worst, ok) if equal else (math.inf, False)
            ulps.append(0)
            continue
        if x.numel() == 0:
            continue
        dtype = _coarser(x.dtype, y.dtype)
        if atol is None:
            e = _memo_error(x, y, device, memo)
            ok = ok and e <= tol
        else:
            e, diff, size = _error(x, y, device)
            if diff is not None:
                bound = atol + tol * torch.nan_to_num(size, posinf=0.0)
                ok = ok and math.isfinite(e) and bool((diff <= bound).all())
        worst = max(worst, e)
        ulps.append(0 if e == 0.0 and x.dtype == y.dtype else _max_ulp(x, y, dtype))
    ulp = None if not ulps or any(u is None for u in ulps) else max(ulps)
    return worst, ok, ulp


def _judge(
    a: _Call,
    b: _Call,
    e_in: float,
    device: torch.device,
    safety: float,
    atol: float | None,
    amplification: float,
    memo: dict,
) -> tuple[tuple, float, bool] | None:
    """``(row without the name, e, passed)`` for one call; None when its output holds no tensor."""
    xs, ys = [_real(t) for t in a.outputs or []], [_real(t) for t in b.outputs or []]
    if not xs and not ys:
        return None
    kind = type(a.module).__name__
    if type(b.module) is not type(a.module):
        kind += f" / {type(b.module).__name__}"
    if len(xs) != len(ys) or any(x.shape != y.shape for x, y in zip(xs, ys, strict=False)):
        row = (kind, f"{_shapes(xs)} / {_shapes(ys)}", "-", math.inf, None, "-", "FAIL (shape)")
        return row, math.inf, False
    floats = [(x, y) for x, y in zip(xs, ys, strict=False) if x.is_floating_point() and y.is_floating_point()]
    if not floats:  # integer or bool outputs must be equal
        e, ok, _ = _compare(xs, ys, 0.0, None, device, memo)
        return (kind, _shapes(xs), "-", e, None, 0.0, "pass" if ok else "FAIL"), e, ok
    dtype = max((_coarser(x.dtype, y.dtype) for x, y in floats), key=lambda d: torch.finfo(d).eps)
    k = _reduction_length(a.module, tuple(a.inputs), floats[0][0], a.query_key)
    condition = _condition(a.module, tuple(a.inputs), a.query_key)
    tol = condition * (_own_tolerance(dtype, k, safety) + amplification * e_in)
    e, ok, ulp = _compare(xs, ys, tol, atol, device, memo)
    return (kind, _shapes(xs), k, e, ulp, tol, "pass" if ok else "FAIL"), e, ok


def _check_inputs(inputs: object) -> tuple[torch.Tensor, ...]:
    """``inputs`` as a tuple: a tensor, or a non-empty tuple or list of tensors."""
    inputs = (inputs,) if isinstance(inputs, torch.Tensor) else inputs
    if not isinstance(inputs, (tuple, list)):
        raise TypeError(f"inputs must be a tensor or a tuple of tensors, got a {type(inputs).__name__}")
    if not inputs:
        raise ValueError("inputs is an empty tuple: give the model at least one tensor")
    for i, x in enumerate(inputs):
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"inputs[{i}] must be a tensor, got a {type(x).__name__}")
    return tuple(inputs)


def _check_number(value: object, name: str, *, positive: bool = False) -> float:
    """A finite real number, at least 0 (above 0 if ``positive``)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got a {type(value).__name__}")
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        bound = "above 0" if positive else "at least 0"
        raise ValueError(f"{name} must be a finite number {bound}, got {value}")
    return float(value)


def _check_same_structure(model_a: torch.nn.Module, model_b: torch.nn.Module) -> None:
    names_a = [name for name, _ in model_a.named_modules()]
    names_b = [name for name, _ in model_b.named_modules()]
    for i in range(max(len(names_a), len(names_b))):
        x = names_a[i] if i < len(names_a) else None
        y = names_b[i] if i < len(names_b) else None
        if x != y:
            if x is None:
                where = f"model_b has the module {y!r}, which model_a lacks"
            elif y is None:
                where = f"model_a has the module {x!r}, which model_b lacks"
            elif x not in names_b:
                where = f"model_a has the module {x!r}, which model_b lacks (it has {y!r} there)"
            else:
                where = f"model_b has the module {y!r} where model_a has {x!r}"
            raise ValueError(f"model_a and model_b must have the same modules (same architecture): {where}")


def _own_code_length(call: _Call) -> int:
    """K for the code a module runs between the calls it makes: 1 for the containers and modules
    ``first_divergence`` knows (their own code only adds or reshapes), else as generous as
    :func:`_unknown_length`."""
    return 1 if _known_elementwise(call.module) else _unknown_length(call.module, tuple(call.inputs))


def _code_before(
    i: int,
    calls_a: list[_Call],
    calls_b: list[_Call],
    labels: list[str],
    errors: list[float | None],
    e_model_in: float,
    device: torch.device,
    safety: float,
    amplification: float,
    memo: dict,
) -> str | None:
    """``"<parent> (its own code, before <call>)"`` when call ``i``'s input differs by more than
    ``amplification`` times the largest error that existed when it started (of the model's inputs
    and of the calls finished by then) plus the rounding its parent's own code may add; else None."""
    a, b = calls_a[i], calls_b[i]
    dtype = _input_dtype(a, b)
    e_in = _incoming_error(a, b, device, memo)
    parents = [j for j, c in enumerate(calls_a) if c.start < a.start and c.end > a.end]
    if e_in == 0.0 or not parents:
        return None
    parent = max(parents, key=lambda j: calls_a[j].start)
    before = [errors[j] for j, c in enumerate(calls_a) if c.end < a.start and errors[j] is not None]
    explained = amplification * max([e_model_in, *before]) + (
        _own_tolerance(dtype, _own_code_length(calls_a[parent]), safety) if dtype is not None else 0.0
    )
    return f"{labels[parent]} (its own code, before {labels[i]})" if e_in > explained else None


def _own_code(
    calls_a: list[_Call],
    calls_b: list[_Call],
    labels: list[str],
    errors: list[float | None],
    device: torch.device,
    safety: float,
    atol: float | None,
    amplification: float,
    memo: dict,
) -> tuple[str, int] | None:
    """The safety net for a difference made in a module's own code, outside any call it makes.

    Only when the model's output differs by more than its own rounding (rtol for K = 1): the first
    call to start whose input error exceeds ``amplification * (largest error of the model's inputs
    and of the calls that finished before it started) + rtol(K = 1)`` names the code around it,
    ``"<parent> (its own code, before <call>)"``; if none does and the output is not explained by
    those errors either, ``"(model) (its own code)"``.
    """
    if len(calls_a) == 1:  # a model that calls no module: the rule has judged all its code
        return None
    root_a, root_b = calls_a[-1], calls_b[-1]
    xs, ys = [_real(t) for t in root_a.outputs or []], [_real(t) for t in root_b.outputs or []]
    pairs = [(x, y) for x, y in zip(xs, ys, strict=False) if x.is_floating_point() and y.is_floating_point()]
    if not pairs or len(xs) != len(ys) or any(x.shape != y.shape for x, y in zip(xs, ys, strict=False)):
        return None
    out_dtype = max((_coarser(x.dtype, y.dtype) for x, y in pairs), key=lambda d: torch.finfo(d).eps)
    tol_out = _own_tolerance(out_dtype, _own_code_length(root_a), safety)
    e_out, ok, _ = _compare(xs, ys, tol_out, atol, device, memo)
    if ok:
        return None
    e_model_in = _incoming_error(root_a, root_b, device, memo)
    order = sorted(range(len(calls_a) - 1), key=lambda i: calls_a[i].start)
    for i in order:
        found = _code_before(
            i, calls_a, calls_b, labels, errors, e_model_in, device, safety, amplification, memo
        )
        if found is not None:
            return found, i
    inner = [e for e in errors[:-1] if e is not None]
    if e_out > amplification * max([e_model_in, *inner]) + tol_out:
        return f"{ROOT} (its own code)", len(calls_a) - 1
    return None


def first_divergence(
    model_a: torch.nn.Module,
    model_b: torch.nn.Module,
    inputs,
    *,
    kwargs: Mapping[str, object] | None = None,
    rtol_safety: float = 4.0,
    atol: float | None = None,
    amplification: float = 2.0,
) -> Divergence:
    """Run both models on ``inputs`` and name the first module whose output diverges.

    ``inputs`` is a tensor or a tuple of tensors, ``kwargs`` a dict of keyword inputs (an
    ``attention_mask=``, say): ``model(*inputs, **kwargs)``. Each model gets its own copy, on the
    device of its first parameter, floating tensors in the dtype of its first floating parameter
    (an in-place operation in one model changes neither the caller's tensors nor the other
    model's inputs). Every module's output (the model's own too, named ``"(model)"``; every tensor
    in a tuple, list or dict output) and inputs are recorded with hooks, ``model_a`` being the
    reference: ``model_b``'s tensors are moved to ``model_a``'s device and both compared in
    float64. A module's error is ``e = max |a - b| / (|a| + scale)``, ``scale = max(mean |a|,
    mean |b|)`` (at least the smallest normal number of the dtype): relative to each entry plus
    the output's typical size, so that entries near zero are judged on the scale of the others
    (lesson 10's ``atol = rtol * scale``); for several output tensors, the largest of their errors.

    The rule: a module passes when ``e <= tol``, where ``tol = c * (rtol(K) + amplification * e_in)``.
    ``rtol(K)`` is ``reduction_tolerances(dtype, K, safety=rtol_safety)``'s rtol for the coarser
    of the two output dtypes and the module's reduction length ``K``, the number of terms along
    its longest chain of sums: ``in_features`` for a Linear, ``in1_features * in2_features`` for
    a Bilinear, ``in_channels / groups * prod(kernel_size)`` for a convolution, the normalized
    size for LayerNorm, RMSNorm, GroupNorm and InstanceNorm, for BatchNorm 1 in eval mode and
    ``N * spatial size`` in training mode, the softmax length (Softmax2d: the channels), the
    pooling window (adaptive average pooling: input size / output size, rounded up), 2 per
    spatial dimension for Upsample, the bag length for a summing or averaging EmbeddingBag
    (2-D input), else its number of indices; for MultiheadAttention the input projection, the dot
    product of a head, the softmax and the weighted sum over the ``S`` keys, and the output
    projection (``max(embed_dim, kdim, vdim) + head_dim + 2 S + embed_dim``); for an RNN, LSTM or
    GRU, ``T * (layer input + h)`` summed over its layers, ``h`` being ``proj_size`` or else
    ``hidden_size`` (with ``proj_size``, plus ``hidden_size`` per layer for the projection),
    since each of the ``T`` steps sums its input and the previous hidden state and passes its
    error on to the next; for an RNN, LSTM or GRU cell, ``input_size + hidden_size``. Elementwise
    modules (activations, dropout, reshaping, padding, max pooling, embedding lookups) and the
    containers whose own code only adds (``Sequential``, the ``Transformer*`` layers) have K = 1.
    A module it does not know, your own included, is judged generously, as if its code summed
    along every dimension of its largest floating input in turn and then along one more
    dimension per own parameter of two or more dimensions, of that parameter's size divided by
    its first dimension (``(B, T, E)`` and one ``E x E`` weight: K = B + T + 2E); the same K
    bounds what its own code adds between the calls it makes.
    ``e_in`` is the largest error among the module's inputs and, for a container, the outputs of
    the modules it ran. In words: each module may add the rounding error of its own sums, and may
    pass on, at most doubled by default, the error it was given; the first that does more is
    blamed. ``c`` is 1 except for ill-conditioned modules, which amplify the rounding of their
    input and of their own first steps: the largest ``|input|`` for a Softmax, LogSoftmax or
    Softmin, the largest ``|score|`` (query . key / sqrt(head_dim), computed from the inputs
    and ``model_a``'s weights) for MultiheadAttention, and ``|mean| / std`` of the normalised
    groups (at least 1) for a LayerNorm, GroupNorm, and InstanceNorm or BatchNorm using batch
    statistics. Other ill-conditioned code (a functional softmax over large scores, a
    subtraction that cancels) is not estimated and can be blamed in a comparison of dtypes.

    A difference made in a container's own code (``x = self.patch(x) + self.pos``) passes this
    rule, because the outputs of the modules it ran carry it. So when no module is blamed but the
    model's output differs by more than its own rounding, the first call whose input differs by
    more than ``amplification`` times the largest error that existed when it started (of the
    model's inputs and of the calls finished by then) plus the rounding its parent's own code may
    add names the code that ran just before it: ``"<parent> (its own code, before <call>)"``
    (that call's row reads ``"FAIL (its input)"``); if no call does, and the output is not
    explained by those errors either, ``"(model) (its own code)"`` (the model's row reads
    ``"FAIL (own code)"``).

    With ``atol`` given, a module passes when ``|a - b| <= atol + tol * |a|`` entry by entry.
    The table has a row for each call, in the order the calls finished (a container after the
    modules it ran), verdict ``"pass"`` or ``"FAIL"``; a call that finishes after the first
    divergence and was given a difference reads ``"inherited"``: its verdict would say nothing
    about the module itself. A module called twice is named ``"act (call 2)"`` the second time, a
    module registered under two names (tied weights) ``"enc = dec"``, and calls whose output holds
    no tensor have no row. The models' train/eval modes are left as the caller set them (a
    Dropout in training mode is a difference to find); each model runs from the same random seed
    (``RUN_SEED``) in a fork of the random state of the CPU and the CUDA devices it uses, so two
    identical models draw the same random numbers and the caller's random state is neither used
    nor changed. Nothing is recorded for gradients; hooks are removed and buffers that a forward
    call changes (a BatchNorm's running statistics in training mode) are restored, even on error.
    The models may be the same object. It costs one forward call of each model plus the
    comparisons, in float64: a few times the two forward calls. Introduced in lesson 12.

    Limits: the hooks change what runs where a module checks for them: a
    ``TransformerEncoderLayer`` with hooks skips its fused fast path
    (``torch._transformer_encoder_layer_fwd``), so a difference that only that path makes is not
    observed here. The models run under ``torch.no_grad()``, so modules that choose a path by grad
    mode take their inference path: ``nn.MultiheadAttention``'s fast path and
    ``nn.TransformerEncoder``'s nested tensors for a padding mask (compared here padded with
    zeros), even where your training run, with gradients, takes another. A forward pass wholly
    under autocast passes by design, since each module is judged against the rounding of its
    coarser dtype: look for identical inputs and a nonzero error. The allowance grows with K, so a
    small planted change in a long recurrent layer can pass (a one-layer LSTM with input and hidden
    size 512 over 256 steps: K = 262,144, rtol about 1.2e-4 in float32). It compares what two
    models compute on the same weights and inputs: compare two served copies of one trained model,
    not two trainings.

    Raises:
        TypeError: a model is not a ``torch.nn.Module``, ``inputs`` is not a tensor or a tuple of
            tensors, ``kwargs`` is not a dict, or a number is not a real number.
        ValueError: a model is compiled (``torch.compile``), the models do not have the same
            module names (the message names the first
            that differs), they ran different modules, ``inputs`` is an empty tuple, or
            ``rtol_safety`` is not positive, ``atol`` or ``amplification`` negative (or a number
            is not finite).
    """
    for name, model in (("model_a", model_a), ("model_b", model_b)):
        if not isinstance(model, torch.nn.Module):
            raise TypeError(f"{name} must be a torch.nn.Module, got a {type(model).__name__}")
        if type(model).__name__ == "OptimizedModule":  # torch.compile's wrapper (lesson 14)
            raise ValueError(
                f"{name} is compiled (torch.compile): its layers run inside generated kernels, and hooks "
                "that recorded each layer's output would change what is compiled. Compare the whole model's "
                "output with eager and a float64 reference instead (lesson 14, section 14.1)."
            )
    inputs = _check_inputs(inputs)
    rtol_safety = _check_number(rtol_safety, "rtol_safety", positive=True)
    if atol is not None:
        atol = _check_number(atol, "atol")
    amplification = _check_number(amplification, "amplification")
    _check_same_structure(model_a, model_b)

    if kwargs is not None and not isinstance(kwargs, Mapping):
        raise TypeError(f"kwargs must be a dict of keyword inputs, got a {type(kwargs).__name__}")
    kwargs = dict(kwargs or {})
    calls_a = _run_seeded(model_a, *_moved((inputs, kwargs), model_a))
    calls_b = _run_seeded(model_b, *_moved((inputs, kwargs), model_b))
    if [c.name for c in calls_a] != [c.name for c in calls_b]:
        i = next(
            (i for i, (x, y) in enumerate(zip(calls_a, calls_b, strict=False)) if x.name != y.name),
            min(len(calls_a), len(calls_b)),
        )
        x = calls_a[i].name if i < len(calls_a) else "nothing"
        y = calls_b[i].name if i < len(calls_b) else "nothing"
        raise ValueError(
            f"model_a and model_b ran different modules: call {i + 1} to finish was {x!r} in model_a "
            f"and {y!r} in model_b"
        )

    device = _placement(model_a)[0]
    memo: dict = {}  # the error of each pair of recorded tensors, computed once
    seen: dict[str, int] = {}
    labels: list[str] = []  # every call's, before judging: a failing call may blame its parent's code
    for a in calls_a:
        seen[a.name] = seen.get(a.name, 0) + 1
        labels.append(a.name if seen[a.name] == 1 else f"{a.name} (call {seen[a.name]})")
    errors: list[float | None] = []  # each call's e; None for one whose output is not compared
    rows, row_calls, received, blamed, first = [], [], [], None, None
    for i, (a, b) in enumerate(zip(calls_a, calls_b, strict=True)):
        label = labels[i]
        inner = [errors[j] for j in range(i) if calls_a[j].start > a.start and errors[j] is not None]
        e_in = max([_incoming_error(a, b, device, memo), *inner])
        judged = _judge(a, b, e_in, device, rtol_safety, atol, amplification, memo)
        errors.append(None if judged is None else judged[1])
        if judged is not None:
            row, _, ok = judged
            rows.append([label, *row])
            row_calls.append(i)
            received.append(e_in)
            if not ok and blamed is None:
                blamed, first = label, len(rows) - 1
                # its input may already differ by more than anything before explains: then the
                # code that made the input is to blame, not the module that amplified it
                e_model_in = _incoming_error(calls_a[-1], calls_b[-1], device, memo)
                code = _code_before(
                    i, calls_a, calls_b, labels, errors, e_model_in, device, rtol_safety, amplification, memo
                )
                if code is not None:
                    blamed, rows[-1][-1] = code, "FAIL (its input)"
    since = None  # when the divergence is there: after the failing call, or as its input arrives
    if first is not None:
        failed = calls_a[row_calls[first]]
        since = failed.end if rows[first][-1] == "FAIL" else failed.start
    if blamed is None and calls_a:
        found = _own_code(calls_a, calls_b, labels, errors, device, rtol_safety, atol, amplification, memo)
        if found is not None:
            blamed, call = found
            since = calls_a[call].start
            first = row_calls.index(call) if call in row_calls else None
            if first is not None:
                rows[first][-1] = "FAIL (own code)" if call == len(calls_a) - 1 else "FAIL (its input)"
    if since is not None:  # a call that finishes after the divergence and receives a difference
        for r, i in enumerate(row_calls):
            if r != first and calls_a[i].end > since and received[r] > 0:
                rows[r][-1] = "inherited"
    rows = [tuple(row) for row in rows]
    headers = ["module", "type", "output shape", "K", "max rel error", "max ULP", "tolerance", "verdict"]
    title = "Module by module (model_a is the reference)"
    return Divergence(module=blamed, table=Table(headers, rows, title=title))
