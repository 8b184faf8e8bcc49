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
