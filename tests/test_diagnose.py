"""helpers.diagnose.first_divergence: the first module whose output diverges."""

from __future__ import annotations

import copy
import math
import re
from pathlib import Path

import pytest
import torch
import torch.nn as nn

import helpers
from helpers.diagnose import Divergence, first_divergence

SRC = Path(helpers.__file__).resolve().parent.parent



def _mlp() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Linear(32, 64), nn.LayerNorm(64), nn.ReLU(), nn.Dropout(0.5), nn.Linear(64, 10)
    ).eval()


def _cnn() -> nn.Module:
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU(), nn.Conv2d(8, 8, 3, groups=2),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 4),
    )
    with torch.no_grad():  # running statistics as after training, not the initial 0 and 1
        model[1].running_mean.uniform_(-0.5, 0.5)
        model[1].running_var.uniform_(0.5, 2.0)
    return model.eval()


X_MLP = torch.randn(16, 32, generator=torch.Generator().manual_seed(1))
X_CNN = torch.randn(4, 3, 10, 10, generator=torch.Generator().manual_seed(2))
MODELS = {"mlp": (_mlp, X_MLP), "cnn": (_cnn, X_CNN)}


def _in_bfloat16(layer: nn.Module) -> None:
    """Run ``layer`` in bfloat16, its input cast on the way in and its output back to float32."""
    layer.to(torch.bfloat16)
    layer.register_forward_pre_hook(lambda m, args: tuple(a.to(torch.bfloat16) for a in args))
    layer.register_forward_hook(lambda m, args, out: out.float())


def test_the_table_has_one_row_per_module_in_execution_order():
    found = first_divergence(_mlp(), _mlp(), X_MLP)
    assert isinstance(found, Divergence) and found.module is None
    table = found.table
    assert table.headers == [
        "module", "type", "output shape", "K", "max rel error", "max ULP", "tolerance", "verdict"
    ]
    assert [row[0] for row in table.rows] == ["0", "1", "2", "3", "4", "(model)"]
    assert [row[3] for row in table.rows] == [32, 64, 1, 1, 64, 1]
    assert table.rows[0][2] == "(16, 64)" and table.rows[0][1] == "Linear"
    assert all(row[-1] == "pass" and row[4] == 0.0 for row in table.rows)


@pytest.mark.parametrize("model", ["mlp", "cnn"])
@pytest.mark.parametrize("index", [0, -1])
def test_a_layer_run_in_bfloat16_is_named(model, index):
    make, x = MODELS[model]
    a, b = make(), make()
    layer = [m for m in b if isinstance(m, (nn.Linear, nn.Conv2d))][index]
    _in_bfloat16(layer)
    name = next(n for n, m in b.named_modules() if m is layer)
    assert first_divergence(a, b, x).module == name


@pytest.mark.parametrize(
    "model, name", [("mlp", "0"), ("mlp", "4"), ("cnn", "0"), ("cnn", "3"), ("cnn", "6")]
)
def test_a_weight_perturbed_by_one_part_in_a_thousand_is_named(model, name):
    make, x = MODELS[model]
    a, b = make(), make()
    with torch.no_grad():
        b.get_submodule(name).weight.mul_(1 + 1e-3)
    found = first_divergence(a, b, x)
    assert found.module == name
    verdicts = {row[0]: row[-1] for row in found.table.rows}
    assert verdicts[name] == "FAIL" and list(verdicts.values()).count("FAIL") == 1


@pytest.mark.parametrize("how", ["float16", "modified"])
def test_a_batchnorm_buffer_is_named(how):
    a, b = _cnn(), _cnn()
    var = b[1].running_var
    with torch.no_grad():
        var.copy_(var.half().float() if how == "float16" else var * 1.01)
    assert not torch.equal(var, a[1].running_var)
    assert first_divergence(a, b, X_CNN).module == "1"


def test_a_dropout_left_in_training_mode_is_named_and_modes_are_kept():
    a, b = _mlp(), _mlp()
    b[3].train()
    found = first_divergence(a, b, X_MLP)
    assert found.module == "3"
    assert b[3].training and not b.training and not a[3].training


def test_identical_copies_and_a_float64_copy_are_not_flagged():
    a = _mlp()
    assert first_divergence(a, copy.deepcopy(a), X_MLP).module is None
    assert first_divergence(a, a, X_MLP).module is None
    found = first_divergence(a, copy.deepcopy(a).double(), X_MLP)
    assert found.module is None
    assert all(row[4] > 0 for row in found.table.rows)  # the float32 roundings are there, and allowed
    cnn = _cnn()
    assert first_divergence(cnn, copy.deepcopy(cnn).double(), X_CNN).module is None


def _reversed_sum(module, args, output):
    """The same Linear with its K products summed in the reverse order: a legitimate reordering."""
    return args[0].flip(-1) @ module.weight.flip(-1).T + module.bias


@pytest.mark.parametrize("width", [64, 1024])
def test_a_reordered_float32_sum_is_not_flagged(width):
    torch.manual_seed(0)
    a = nn.Sequential(nn.Linear(width, width), nn.LayerNorm(width), nn.ReLU(), nn.Linear(width, 10)).eval()
    b = copy.deepcopy(a)
    for m in b.modules():
        if isinstance(m, nn.Linear):
            m.register_forward_hook(_reversed_sum)
    x = torch.randn(32, width, generator=torch.Generator().manual_seed(3))
    found = first_divergence(a, b, x)
    assert found.module is None
    assert found.table.rows[0][4] > 0  # the order really changed the bits


def test_a_fixed_atol_judges_entry_by_entry():
    a, b = _mlp(), _mlp()
    with torch.no_grad():
        b[4].weight.mul_(1 + 1e-3)
    assert first_divergence(a, b, X_MLP, atol=0.0).module == "4"
    assert first_divergence(a, b, X_MLP, atol=1.0).module is None


def test_hooks_are_removed_and_batchnorm_statistics_restored_even_on_error():
    a, b = _cnn().train(), _cnn().train()
    before = {k: v.clone() for k, v in b.state_dict().items()}
    found = first_divergence(a, b, X_CNN)
    assert found.module is None  # batch statistics, the same in both
    assert all(torch.equal(before[k], v) for k, v in b.state_dict().items())
    with pytest.raises(RuntimeError):
        first_divergence(a, b, torch.randn(4, 5, 10, 10))  # the wrong number of channels
    for model in (a, b):
        for m in model.modules():
            assert not m._forward_hooks and not m._forward_pre_hooks
    assert all(torch.equal(before[k], v) for k, v in b.state_dict().items())


def test_inputs_are_moved_to_each_models_dtype_and_may_be_a_tuple():
    class Two(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 2)

        def forward(self, x, y):
            return self.fc(x) + y

    torch.manual_seed(0)
    a = Two()
    x, y = torch.randn(3, 4), torch.randn(3, 2)
    assert first_divergence(a, copy.deepcopy(a).double(), (x, y)).module is None
    assert first_divergence(a, copy.deepcopy(a), [x.double(), y]).module is None


class _Branchy(nn.Module):
    """One ReLU used twice, and a branch that depends on a flag."""

    def __init__(self, skip: bool = False):
        super().__init__()
        self.fc1, self.fc2, self.act, self.skip = nn.Linear(4, 4), nn.Linear(4, 4), nn.ReLU(), skip

    def forward(self, x):
        x = self.act(self.fc1(x))
        return x if self.skip else self.act(self.fc2(x))


def test_a_module_called_twice_gets_a_row_per_call():
    torch.manual_seed(0)
    a = _Branchy()
    names = [row[0] for row in first_divergence(a, copy.deepcopy(a), torch.randn(3, 4)).table.rows]
    assert names == ["fc1", "act", "fc2", "act (call 2)", "(model)"]


def _shorter() -> nn.Module:
    return nn.Sequential(nn.Linear(32, 64), nn.LayerNorm(64), nn.ReLU(), nn.Linear(64, 10))


def _on_two_paths() -> tuple[nn.Module, nn.Module]:
    torch.manual_seed(0)
    a = _Branchy()
    b = copy.deepcopy(a)
    b.skip = True
    return a, b


def _mlps() -> tuple[nn.Module, nn.Module]:
    return _mlp(), _mlp()


BAD_INPUTS = {  # a call, the error it must raise, and a fragment of the message
    "model_a not a module": (lambda: first_divergence("model", _mlp(), X_MLP), TypeError,
                             "model_a must be a torch.nn.Module"),
    "model_b not a module": (lambda: first_divergence(_mlp(), None, X_MLP), TypeError,
                             "model_b must be a torch.nn.Module"),
    "inputs a number": (lambda: first_divergence(*_mlps(), 1.0), TypeError,
                        "inputs must be a tensor or a tuple of tensors"),
    "inputs holding a number": (lambda: first_divergence(*_mlps(), (X_MLP, 1.0)), TypeError,
                                "inputs[1] must be a tensor"),
    "inputs empty": (lambda: first_divergence(*_mlps(), ()), ValueError, "inputs is an empty tuple"),
    "rtol_safety zero": (lambda: first_divergence(*_mlps(), X_MLP, rtol_safety=0), ValueError,
                         "rtol_safety must be a finite number above 0"),
    "atol negative": (lambda: first_divergence(*_mlps(), X_MLP, atol=-1e-6), ValueError,
                      "atol must be a finite number at least 0"),
    "amplification NaN": (lambda: first_divergence(*_mlps(), X_MLP, amplification=math.nan), ValueError,
                          "amplification must be a finite number"),
    "amplification a str": (lambda: first_divergence(*_mlps(), X_MLP, amplification="2"), TypeError,
                            "amplification must be a real number"),
    "a module model_b lacks": (lambda: first_divergence(_mlp(), _shorter(), X_MLP), ValueError,
                               "model_a has the module '4', which model_b lacks"),
    "a module model_a lacks": (lambda: first_divergence(_shorter(), _mlp(), X_MLP), ValueError,
                               "model_b has the module '4', which model_a lacks"),
    "another path through the model": (lambda: first_divergence(*_on_two_paths(), torch.randn(3, 4)),
                                       ValueError, "ran different modules: call 3"),
}


@pytest.mark.parametrize("call, error, fragment", BAD_INPUTS.values(), ids=BAD_INPUTS)
def test_bad_input_gets_a_clear_error(call, error, fragment):
    with pytest.raises(error, match=re.escape(fragment)):
        call()




class _DoublesInPlace(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        x.mul_(2)
        return self.fc(x)


@pytest.mark.parametrize(
    "make", [_DoublesInPlace, lambda: nn.Sequential(nn.ReLU(inplace=True), nn.Linear(4, 3))]
)
def test_each_model_gets_its_own_copy_of_the_inputs(make):
    torch.manual_seed(0)
    a = make()
    x = torch.randn(5, 4)
    before = x.clone()
    assert first_divergence(a, copy.deepcopy(a), x).module is None
    assert torch.equal(x, before)  # the caller's tensor is unchanged
    found = first_divergence(a, copy.deepcopy(a), x)
    assert all(row[4] == 0.0 for row in found.table.rows)  # model_b saw what model_a saw


def test_models_run_from_the_same_seed_without_touching_the_callers_random_state():
    model = _mlp().train()  # its Dropout draws random masks
    state = torch.get_rng_state()
    assert first_divergence(model, model, X_MLP).module is None
    assert first_divergence(model, copy.deepcopy(model), X_MLP).module is None
    assert torch.equal(torch.get_rng_state(), state)
    b = _mlp()
    b[3].train()
    assert first_divergence(_mlp(), b, X_MLP).module == "3"  # eval against train still differs
    assert torch.equal(torch.get_rng_state(), state)


class _PatchPos(nn.Module):
    """ViT-like: a position embedding added in the model's own code."""

    def __init__(self):
        super().__init__()
        self.patch = nn.Linear(8, 16)
        self.pos = nn.Parameter(torch.randn(4, 16))
        self.blocks = nn.Sequential(nn.Linear(16, 16), nn.GELU(), nn.Linear(16, 16))
        self.head = nn.Linear(16, 3)

    def forward(self, x):
        x = self.patch(x) + self.pos
        x = self.blocks(x)
        return self.head(x.mean(1))


class _Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(8, 16), nn.Linear(16, 4)
        self.scale = nn.Parameter(torch.full((16,), 0.5))

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)) * self.scale)


@pytest.mark.parametrize(
    "make, x, parameter, factor, expected",
    [
        (_PatchPos, torch.randn(2, 4, 8), "pos", 1.05, "(model) (its own code, before blocks)"),
        (_Scaled, torch.randn(6, 8), "scale", 1.01, "(model) (its own code, before fc2)"),
    ],
)
def test_a_difference_made_in_a_containers_own_code_is_named(make, x, parameter, factor, expected):
    torch.manual_seed(0)
    a = make()
    b = copy.deepcopy(a)
    with torch.no_grad():
        getattr(b, parameter).mul_(factor)
    assert first_divergence(a, b, x).module == expected
    assert first_divergence(a, copy.deepcopy(a), x).module is None
    assert first_divergence(a, copy.deepcopy(a).double(), x).module is None


class _TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(8, 4))

    def forward(self, x):
        return x @ self.w, {"sum": x.sum(-1)}


class _UsesTwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads, self.fc = _TwoHeads(), nn.Linear(4, 2)

    def forward(self, x):
        h, extra = self.heads(x)
        return self.fc(h) + extra["sum"][:, None]


def test_a_module_with_a_tuple_output_is_judged_on_every_tensor():
    torch.manual_seed(0)
    a = _UsesTwoHeads()
    x = torch.randn(5, 8)
    b = copy.deepcopy(a)
    with torch.no_grad():
        b.heads.w.mul_(1.01)
    found = first_divergence(a, b, x)
    assert found.module == "heads"
    row = next(r for r in found.table.rows if r[0] == "heads")
    assert row[2] == "(5, 4), (5)" and row[-1] == "FAIL"
    assert first_divergence(a, copy.deepcopy(a).double(), x).module is None


def test_an_attention_weight_used_through_the_functional_api_is_found():
    torch.manual_seed(0)
    for training in (False, True):  # the fused fast path in eval mode, the modules in training mode
        a = nn.TransformerEncoderLayer(16, 4, 32, dropout=0.1, batch_first=True).train(training)
        b = copy.deepcopy(a)
        with torch.no_grad():
            b.self_attn.in_proj_weight.mul_(1.01)
        x = torch.randn(2, 5, 16)
        assert first_divergence(a, b, x).module is not None
        assert first_divergence(a, copy.deepcopy(a), x).module is None
        assert first_divergence(a, copy.deepcopy(a).double(), x).module is None


@pytest.mark.parametrize("seed", range(4))
def test_ill_conditioned_softmax_and_layernorm_are_not_blamed_in_a_float64_comparison(seed):
    torch.manual_seed(seed)
    softmax = nn.Sequential(nn.Linear(64, 64), nn.Softmax(-1))
    x = torch.randn(32, 64) * 10
    with torch.no_grad():
        assert 4 < float(softmax[0](x).std()) < 8  # logits of std about 6
    assert first_divergence(softmax, copy.deepcopy(softmax).double(), x).module is None
    norm = nn.Sequential(nn.Linear(64, 64), nn.LayerNorm(64))
    with torch.no_grad():
        norm[0].bias.add_(100.0)  # a large mean: LayerNorm's subtraction cancels
    assert first_divergence(norm, copy.deepcopy(norm).double(), torch.randn(32, 64)).module is None


class _Blows(nn.Module):
    def __init__(self, value):
        super().__init__()
        self.fc, self.value = nn.Linear(3, 3), value

    def forward(self, x):
        y = self.fc(x)
        if self.value is not None:
            y = y.clone()
            y[0, 0] = self.value
        return y


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan])
def test_an_infinity_or_nan_against_a_finite_number_is_an_infinite_error(value):
    torch.manual_seed(0)
    a = _Blows(None)
    b = copy.deepcopy(a)
    b.value = value
    found = first_divergence(a, b, torch.randn(2, 3))
    assert found.module == "(model)"
    assert found.table.rows[-1][4] == math.inf


class _Scale(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.ones(1))

    def forward(self, x):
        return x * self.w


def test_an_all_zero_reference_is_judged_on_the_other_sides_scale():
    from helpers.diagnose import _error

    e = _error(torch.zeros(4), torch.full((4,), 1e-3), torch.device("cpu"))[0]
    assert e == pytest.approx(1.0)
    # 2e-8 is 0 in float16 and below its smallest normal number: a tiny difference, not an infinite one
    found = first_divergence(_Scale().half(), _Scale(), torch.full((4,), 2e-8))
    assert found.module is None
    assert all(math.isfinite(row[4]) and row[4] < 1e-3 for row in found.table.rows)


class _Tied(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(4, 4)
        self.dec = self.enc  # tied: one module, two names

    def forward(self, x):
        return self.dec(torch.tanh(self.enc(x)))


def test_a_module_registered_under_two_names_is_labelled_by_both():
    torch.manual_seed(0)
    a = _Tied()
    names = [row[0] for row in first_divergence(a, copy.deepcopy(a), torch.randn(3, 4)).table.rows]
    assert names == ["enc = dec", "enc = dec (call 2)", "(model)"]


@pytest.mark.parametrize("shape, k", [((2, 3, 5), 2), ((2, 3), 3), ((4,), 4), ((2, 3, 4, 5), 3)])
def test_softmax_without_a_dim_uses_the_legacy_dim(shape, k):
    import warnings

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(shape[-1], shape[-1]), nn.Softmax(dim=None))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Implicit dimension choice for softmax has been deprecated"
        found = first_divergence(model, copy.deepcopy(model), torch.randn(shape))
    assert found.table.rows[1][1] == "Softmax" and found.table.rows[1][3] == k


# ============================================================ realistic sizes: attention, recurrent layers

D, HEADS, T = 256, 8, 64  # a realistic width and sequence: float32 differences exceed K = 1's allowance
X_SEQ = torch.randn(4, T, D, generator=torch.Generator().manual_seed(11))
X_RNN = torch.randn(4, T, 128, generator=torch.Generator().manual_seed(12))


class _Attend(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.attn, self.norm = nn.MultiheadAttention(D, HEADS, batch_first=True), nn.LayerNorm(D)

    def forward(self, x, mask=None):
        return self.norm(x + self.attn(x, x, x, key_padding_mask=mask, need_weights=False)[0])


class _Recur(nn.Module):
    def __init__(self, kind=nn.LSTM) -> None:
        super().__init__()
        self.rnn, self.head = kind(128, D, 2, batch_first=True), nn.Linear(D, 10)

    def forward(self, x):
        return self.head(self.rnn(x)[0][:, -1])


class _Block(nn.Module):
    """A hand-written GPT block: attention in its own code, between two Linear layers."""

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        self.approximate = approximate
        self.ln1, self.ln2 = nn.LayerNorm(D), nn.LayerNorm(D)
        self.qkv, self.proj = nn.Linear(D, 3 * D), nn.Linear(D, D)
        self.fc, self.out = nn.Linear(D, 4 * D), nn.Linear(4 * D, D)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = (z.view(b, t, HEADS, d // HEADS).transpose(1, 2) for z in self.qkv(self.ln1(x)).split(d, 2))
        causal = torch.ones(t, t, dtype=torch.bool).triu(1)
        scores = (q @ k.transpose(-2, -1) / math.sqrt(d // HEADS)).masked_fill(causal, -math.inf)
        x = x + self.proj((scores.softmax(-1) @ v).transpose(1, 2).reshape(b, t, d))
        return x + self.out(nn.functional.gelu(self.fc(self.ln2(x)), approximate=self.approximate))


def _encoder() -> nn.Module:
    return nn.TransformerEncoderLayer(D, HEADS, 4 * D, batch_first=True)


def _sharpened(model: nn.Module) -> nn.Module:
    """Query and key weights four times larger: scores 16 times larger, as in a trained model."""
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, nn.MultiheadAttention):
                module.in_proj_weight[: 2 * D].mul_(4)
            if isinstance(module, _Block):
                module.qkv.weight[: 2 * D].mul_(4)
    return model


def _switched(model: nn.Module, name: str, value: bool) -> nn.Module:
    """``model`` running with a torch.backends switch set to ``value`` during its forward call."""
    backends = torch.backends
    get, set_ = {
        "mha fast path": (backends.mha.get_fastpath_enabled, backends.mha.set_fastpath_enabled),
        "oneDNN": (lambda: backends.mkldnn.enabled, lambda v: setattr(backends.mkldnn, "enabled", v)),
    }[name]
    saved = []
    model.register_forward_pre_hook(lambda m, a: (saved.append(get()), set_(value)) and None)
    model.register_forward_hook(lambda m, a, o: set_(saved.pop()))
    return model


def _built(make) -> nn.Module:
    torch.manual_seed(0)
    return make().eval()


CLEAN_AT_SIZE = {  # model_a, model_b: the same weights, another legitimate float32 computation
    "attention, fast path against the Python path": (
        lambda: _built(_Attend), lambda m: _switched(m, "mha fast path", False), X_SEQ,
    ),
    "attention, float64": (lambda: _built(_Attend), lambda m: m.double(), X_SEQ),
    "sharp attention, fast path against the Python path": (
        lambda: _sharpened(_built(_Attend)), lambda m: _switched(m, "mha fast path", False), X_SEQ,
    ),
    "sharp attention, float64": (lambda: _sharpened(_built(_Attend)), lambda m: m.double(), X_SEQ),
    "LSTM, oneDNN off": (lambda: _built(_Recur), lambda m: _switched(m, "oneDNN", False), X_RNN),
    "LSTM, float64": (lambda: _built(_Recur), lambda m: m.double(), X_RNN),
    "GRU, float64": (lambda: _built(lambda: _Recur(nn.GRU)), lambda m: m.double(), X_RNN),
    "transformer layer, float64": (lambda: _built(_encoder), lambda m: m.double(), X_SEQ),
    "sharp transformer layer, float64": (lambda: _sharpened(_built(_encoder)), lambda m: m.double(), X_SEQ),
    "hand-written block, float64": (lambda: _built(_Block), lambda m: m.double(), X_SEQ),
    "sharp hand-written block, float64": (lambda: _sharpened(_built(_Block)), lambda m: m.double(), X_SEQ),
}


@pytest.mark.parametrize("case", CLEAN_AT_SIZE)
def test_attention_and_recurrent_layers_at_realistic_sizes_are_not_blamed(case):
    make, change, x = CLEAN_AT_SIZE[case]
    model = make()
    other = change(copy.deepcopy(model))
    found = first_divergence(model, other, x)
    assert found.module is None, found
    assert max(row[4] for row in found.table.rows) > 1e-6   # a real difference, near K = 1's 1.3e-6 or above


def _perturbed(name: str, relative: float):
    def change(model: nn.Module) -> nn.Module:
        p = dict(model.named_parameters())[name]
        with torch.no_grad():
            p.mul_(1 + relative * torch.randn(p.shape, generator=torch.Generator().manual_seed(5)))
        return model

    return change


def _gelu_tanh(model: nn.Module) -> nn.Module:
    model.approximate = "tanh"
    return model


def _linear_in_bfloat16(model: nn.Module) -> nn.Module:
    _in_bfloat16(model.proj)
    return model


PLANTED_AT_SIZE = {  # model_a, the cause, the inputs, and the name first_divergence must give
    "attention's input projection": (
        lambda: _built(_Attend), _perturbed("attn.in_proj_weight", 1e-4), X_SEQ, "attn",
    ),
    "sharp attention's output projection": (
        lambda: _sharpened(_built(_Attend)), _perturbed("attn.out_proj.weight", 1e-4), X_SEQ, "attn",
    ),
    "an LSTM's recurrent weight": (
        lambda: _built(_Recur), _perturbed("rnn.weight_hh_l0", 1e-4), X_RNN, "rnn",
    ),
    "a GRU's input weight": (
        lambda: _built(lambda: _Recur(nn.GRU)), _perturbed("rnn.weight_ih_l1", 1e-4), X_RNN, "rnn",
    ),
    "a transformer layer's feed-forward weight": (
        lambda: _built(_encoder), _perturbed("linear2.weight", 1e-4), X_SEQ, "linear2",
    ),
    "a transformer layer in training mode": (
        lambda: _built(_encoder), lambda m: m.train(), X_SEQ, "self_attn",
    ),
    "a block's projection in bfloat16": (lambda: _built(_Block), _linear_in_bfloat16, X_SEQ, "proj"),
    "GELU's tanh approximation in a block's own code": (
        lambda: _built(_Block), _gelu_tanh, X_SEQ, "(model) (its own code, before out)",
    ),
}


@pytest.mark.parametrize("case", PLANTED_AT_SIZE)
def test_planted_causes_at_realistic_sizes_are_still_found(case):
    make, change, x, expected = PLANTED_AT_SIZE[case]
    model = make()
    assert first_divergence(model, change(copy.deepcopy(model)), x).module == expected


def test_attention_and_rnn_get_the_length_of_their_longest_chain_of_sums():
    model = _built(_Attend)
    rows = {row[0]: row for row in first_divergence(model, model, X_SEQ).table.rows}
    assert rows["attn"][3] == D + D // HEADS + 2 * T + D     # projections, one head's dot product, 2 x keys
    recur = _built(_Recur)
    rows = {row[0]: row for row in first_divergence(recur, recur, X_RNN).table.rows}
    assert rows["rnn"][3] == T * (128 + D) + T * (D + D)     # each step, each layer


def test_a_module_it_does_not_know_is_sized_from_its_input_and_its_weights():
    class Mine(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = nn.Parameter(torch.randn(D, 2 * D))

        def forward(self, x):
            return (x @ self.w).tanh()

    model = Mine()
    rows = {row[0]: row for row in first_divergence(model, model, X_SEQ).table.rows}
    assert rows["(model)"][3] == 4 + T + D + 2 * D       # every dimension of (4, T, D), then w's fan-in


def test_keyword_inputs_reach_both_models():
    model = _built(_Attend)
    mask = torch.zeros(4, T, dtype=torch.bool)
    mask[:, T // 2 :] = True                             # the second half of every sequence is padding
    masked = first_divergence(model, copy.deepcopy(model), X_SEQ, kwargs={"mask": mask})
    plain = first_divergence(model, copy.deepcopy(model), X_SEQ)
    assert masked.module is None and plain.module is None
    changed = copy.deepcopy(model)
    with torch.no_grad():
        changed.attn.in_proj_weight[:D].mul_(1.01)
    assert first_divergence(model, changed, X_SEQ, kwargs={"mask": mask}).module == "attn"
    with pytest.raises(TypeError, match="kwargs must be a dict"):
        first_divergence(model, model, X_SEQ, kwargs=[mask])


def test_rows_after_the_first_failure_that_receive_a_difference_read_inherited():
    model = _built(_mlp)
    broken = copy.deepcopy(model)
    with torch.no_grad():
        broken[0].weight.mul_(1.5)
    verdicts = [row[7] for row in first_divergence(model, broken, X_MLP).table.rows]
    assert verdicts == ["FAIL", "inherited", "inherited", "inherited", "inherited", "inherited"]

    class Parallel(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a, self.b = nn.Linear(4, 4), nn.Linear(4, 4)

        def forward(self, x):
            return self.a(x) + self.b(x)

    two = Parallel()
    other = copy.deepcopy(two)
    with torch.no_grad():
        other.a.weight.mul_(1.5)       # path a fails; path b, run after it on the same input, does not
    rows = {row[0]: row[7] for row in first_divergence(two, other, torch.randn(3, 4)).table.rows}
    assert rows == {"a": "FAIL", "b": "pass", "(model)": "inherited"}


def test_an_input_that_is_an_earlier_output_is_recorded_once_unless_changed_in_place():
    from helpers.diagnose import _run_recorded

    model = nn.Sequential(nn.Linear(4, 4), nn.Tanh(), nn.ReLU(inplace=True), nn.Linear(4, 2))
    calls = {c.name: c for c in _run_recorded(model, (torch.randn(3, 4),), {})}
    assert calls["1"].inputs[0] is calls["0"].outputs[0]       # the same tensor, copied once
    assert calls["3"].inputs[0] is not calls["1"].outputs[0]   # ReLU changed it in place
    assert calls["3"].inputs[0] is calls["2"].outputs[0]
    assert not torch.equal(calls["1"].outputs[0], calls["3"].inputs[0])


def _sharp_mha(**options) -> nn.MultiheadAttention:
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(D, HEADS, batch_first=True, **options).eval()
    same = mha._qkv_same_embed_dim
    with torch.no_grad():
        for w in [mha.in_proj_weight[: 2 * D]] if same else [mha.q_proj_weight, mha.k_proj_weight]:
            w.mul_(4)
    return mha


ROOTS = {  # a model that is one module, against its float64 copy, and its inputs
    "LayerNorm, far from zero": (lambda: nn.LayerNorm(D), (X_SEQ + 300,)),
    "BatchNorm in training mode, far from zero": (lambda: nn.BatchNorm1d(D).train(), (X_SEQ[:, 0] + 100,)),
    "sharp attention with other key and value sizes": (
        lambda: _sharp_mha(kdim=192, vdim=96), (X_SEQ, X_SEQ[..., :192], X_SEQ[..., :96])),
}


@pytest.mark.parametrize("case", ROOTS)
def test_a_model_that_is_one_module_is_judged_by_the_rule_alone(case):
    make, x = ROOTS[case]
    torch.manual_seed(0)
    model = make()
    assert first_divergence(model, copy.deepcopy(model).double(), x).module is None


class _KeyByName(nn.Module):
    """Attention called with the value before the key, by keyword, and sizes that tell them apart."""

    def __init__(self) -> None:
        super().__init__()
        self.attn = nn.MultiheadAttention(D, HEADS, kdim=192, vdim=96, batch_first=True)

    def forward(self, q, k, v):
        return self.attn(q, value=v, key=k, need_weights=False)[0]


def test_attention_reads_its_key_by_name_too():
    torch.manual_seed(0)
    model = _KeyByName().eval()
    inputs = (X_SEQ, X_SEQ[..., :192], X_SEQ[..., :96])
    assert first_divergence(model, copy.deepcopy(model).double(), inputs).module is None
    rows = {row[0]: row for row in first_divergence(model, model, inputs).table.rows}
    assert rows["attn"][3] == D + D // HEADS + 2 * T + D


def test_a_tensor_passed_twice_stays_one_tensor_so_self_attention_keeps_its_fast_path():
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(D, HEADS, batch_first=True).eval()
    slow = _switched(copy.deepcopy(mha), "mha fast path", False)
    found = first_divergence(mha, slow, (X_SEQ, X_SEQ, X_SEQ), kwargs={"need_weights": False})
    with torch.no_grad():
        fast_out = mha(X_SEQ, X_SEQ, X_SEQ, need_weights=False)[0]
        slow_out = slow(X_SEQ, X_SEQ, X_SEQ, need_weights=False)[0]
    assert not torch.equal(fast_out, slow_out)           # the two paths differ on this input ...
    assert found.module is None and found.table.rows[0][4] > 0   # ... and first_divergence saw it


@pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors")  # torch's, from the encoder
def test_the_encoders_padded_path_is_compared_padded():
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(D, HEADS, 4 * D, batch_first=True)
    model = nn.TransformerEncoder(layer, 2).eval()        # nested tensors for a padding mask, by default
    mask = torch.zeros(4, T, dtype=torch.bool)
    mask[:2, T // 2 :] = True
    kwargs = {"src_key_padding_mask": mask}
    assert first_divergence(model, copy.deepcopy(model).double(), X_SEQ, kwargs=kwargs).module is None
    changed = _perturbed("layers.1.linear1.weight", 1e-3)(copy.deepcopy(model))
    assert first_divergence(model, changed, X_SEQ, kwargs=kwargs).module == "layers.1.linear1"


class _Unrolled(nn.Module):
    """An RNN cell unrolled in the model's own code, from a learned initial state."""

    def __init__(self) -> None:
        super().__init__()
        self.h0 = nn.Parameter(torch.randn(D))
        self.cell = nn.RNNCell(128, D)

    def forward(self, x):
        h = self.h0.expand(x.shape[0], -1)
        for t in range(x.shape[1]):
            h = self.cell(x[:, t], h)
        return h


def test_a_difference_in_own_code_is_not_blamed_on_the_module_that_amplifies_it():
    torch.manual_seed(0)
    model = _Unrolled().eval()
    changed = _perturbed("h0", 1e-3)(copy.deepcopy(model))
    found = first_divergence(model, changed, X_RNN[:, :8])
    assert found.module == "(model) (its own code, before cell)"
    assert found.table.rows[0][7] == "FAIL (its input)"
    assert first_divergence(model, copy.deepcopy(model).double(), X_RNN[:, :8]).module is None
