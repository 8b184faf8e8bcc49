"""helpers.fingerprint (the function and ``python -m helpers.fingerprint``) and helpers.diagnose."""

from __future__ import annotations

import copy
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn as nn

import helpers
from helpers.devices import RESULT_ENV_VARS
from helpers.diagnose import Divergence, first_divergence
from helpers.fingerprint import diff_fingerprints, fingerprint, main

SRC = Path(helpers.__file__).resolve().parent.parent

# ============================================================================ fingerprint

KEYS = [
    "python", "platform", "torch", "cuda", "cudnn", "mkl", "mkl_version", "onednn", "onednn_version",
    "cpu_capability", "cpu", "cuda_devices", "threads.intra_op", "threads.inter_op", "default_dtype",
    "precision.float32_matmul", "precision.cublas.fp16_reduced_precision_reduction",
    "precision.cublas.bf16_reduced_precision_reduction", "deterministic.algorithms",
    "deterministic.warn_only", "deterministic.cudnn", "deterministic.cudnn_benchmark",
    "deterministic.fill_uninitialized_memory", "env.PYTHONHASHSEED",
]


def test_fingerprint_is_flat_json_with_the_documented_keys():
    record = fingerprint()
    assert json.loads(json.dumps(record)) == record
    assert all(isinstance(v, (str, int, float, bool, type(None))) for v in record.values())
    missing = [k for k in KEYS + [f"env.{name}" for name in RESULT_ENV_VARS] if k not in record]
    assert not missing
    assert record["torch"] == torch.__version__
    assert record["threads.intra_op"] == torch.get_num_threads()
    assert any(k.startswith(("precision.fp32_precision", "precision.allow_tf32")) for k in record)


def _changed_keys(change, restore) -> set[str]:
    before = fingerprint()
    try:
        change()
        after = fingerprint()
    finally:
        restore()
    assert fingerprint() == before  # the test restored every setting
    return {row[0] for row in diff_fingerprints(before, after).rows}


def test_fingerprint_follows_the_thread_count():
    n = torch.get_num_threads()
    changed = _changed_keys(lambda: torch.set_num_threads(n + 1), lambda: torch.set_num_threads(n))
    assert changed == {"threads.intra_op"}


def _fp32_precision_settings() -> list[tuple[object, str]]:
    """Each ``fp32_precision`` setting this torch has, with its value: setting the float32 matmul
    precision back does not put them back (``"highest"`` leaves ``"ieee"`` where ``"none"`` was)."""
    b = torch.backends
    places = [b, b.mkldnn, b.mkldnn.matmul, b.mkldnn.conv, b.mkldnn.rnn, b.cuda.matmul, b.cudnn, b.cudnn.conv,
              b.cudnn.rnn]
    return [(place, place.fp32_precision) for place in places if hasattr(place, "fp32_precision")]


def test_fingerprint_follows_the_float32_matmul_precision():
    old, saved = torch.get_float32_matmul_precision(), _fp32_precision_settings()
    new = "medium" if old != "medium" else "highest"

    def restore():
        torch.set_float32_matmul_precision(old)
        for place, value in saved:
            place.fp32_precision = value

    changed = _changed_keys(lambda: torch.set_float32_matmul_precision(new), restore)
    assert "precision.float32_matmul" in changed


def test_fingerprint_follows_deterministic_algorithms():
    # torch.use_deterministic_algorithms also copies the flag into torch._inductor's config, whose
    # first import takes over a second; the fingerprint reads the flag that this setter sets.
    use = getattr(torch._C, "_set_deterministic_algorithms", torch.use_deterministic_algorithms)
    on = torch.are_deterministic_algorithms_enabled()
    warn = torch.is_deterministic_algorithms_warn_only_enabled()
    changed = _changed_keys(lambda: use(not on, warn_only=not warn), lambda: use(on, warn_only=warn))
    assert {"deterministic.algorithms", "deterministic.warn_only"} <= changed


@pytest.mark.parametrize("name", ["OMP_NUM_THREADS", "MKL_CBWR", "PYTHONHASHSEED"])
def test_fingerprint_follows_result_changing_environment_variables(name, monkeypatch):
    monkeypatch.delenv(name, raising=False)
    before = fingerprint()
    monkeypatch.setenv(name, "3")
    after = fingerprint()
    assert before[f"env.{name}"] is None and after[f"env.{name}"] == "3"
    assert diff_fingerprints(before, after).rows == [[f"env.{name}", None, "3"]]


NEW_KEYS = [
    "numpy", "nvidia_driver", "backends.cudnn.enabled", "backends.mkldnn.enabled", "backends.cuda.flash_sdp",
    "backends.cuda.mem_efficient_sdp", "backends.cuda.math_sdp", "backends.cuda.cudnn_sdp",
    "backends.cuda.fp16_bf16_reduction_math_sdp", "backends.cuda.preferred_blas_library",
    "backends.cuda.preferred_linalg_library", "backends.mha.fastpath", "backends.opt_einsum.enabled",
    "backends.opt_einsum.strategy", "env.MKL_ENABLE_INSTRUCTIONS", "env.TORCH_BLAS_PREFER_CUBLASLT",
]


def test_fingerprint_records_the_kernel_switches_and_more_versions():
    import numpy

    record = fingerprint()
    missing = [k for k in NEW_KEYS if k not in record]
    assert not missing
    assert record["numpy"] == numpy.__version__
    if hasattr(torch.backends.mkldnn, "deterministic"):
        assert record["backends.mkldnn.deterministic"] == torch.backends.mkldnn.deterministic
    assert "MKL_ENABLE_INSTRUCTIONS" not in RESULT_ENV_VARS  # the fingerprint's own list only
    assert "TORCH_BLAS_PREFER_CUBLASLT" not in RESULT_ENV_VARS
    if not torch.cuda.is_available():
        assert record["nvidia_driver"] is None


@pytest.mark.parametrize(
    "key, get, set_",
    [
        (
            "backends.mha.fastpath",
            torch.backends.mha.get_fastpath_enabled,
            torch.backends.mha.set_fastpath_enabled,
        ),
        ("backends.cuda.math_sdp", torch.backends.cuda.math_sdp_enabled, torch.backends.cuda.enable_math_sdp),
        ("backends.cuda.flash_sdp", torch.backends.cuda.flash_sdp_enabled,
         torch.backends.cuda.enable_flash_sdp),
        (
            "backends.mkldnn.enabled",
            lambda: torch.backends.mkldnn.enabled,
            lambda v: setattr(torch.backends.mkldnn, "enabled", v),
        ),
    ],
)
def test_fingerprint_follows_the_kernel_switches(key, get, set_):
    old = get()
    assert _changed_keys(lambda: set_(not old), lambda: set_(old)) == {key}


@pytest.mark.parametrize("name", ["MKL_ENABLE_INSTRUCTIONS", "TORCH_BLAS_PREFER_CUBLASLT"])
def test_fingerprint_follows_its_own_environment_variables(name, monkeypatch):
    monkeypatch.delenv(name, raising=False)
    before = fingerprint()
    monkeypatch.setenv(name, "1")
    assert {row[0] for row in diff_fingerprints(before, fingerprint()).rows} == {f"env.{name}"}


# ============================================================================ diff_fingerprints


def test_diff_of_equal_fingerprints_is_empty_also_through_json():
    record = fingerprint()
    table = diff_fingerprints(record, json.loads(json.dumps(record)))
    assert table.headers == ["setting", "a", "b"]
    assert len(table.rows) == 0


def test_diff_lists_changed_added_and_removed_keys_sorted():
    a = {"torch": "2.13", "threads.intra_op": 2, "env.MKL_CBWR": None, "cuda": None}
    b = {"torch": "2.14", "threads.intra_op": 2, "env.MKL_CBWR": None, "mkl": True}
    rows = diff_fingerprints(a, b).rows
    assert rows == [["cuda", None, "(absent)"], ["mkl", "(absent)", True], ["torch", "2.13", "2.14"]]


def test_diff_tells_true_from_one_and_none_from_a_string():
    rows = diff_fingerprints({"x": True, "y": None, "z": 1}, {"x": 1, "y": "None", "z": 1.0}).rows
    assert [row[0] for row in rows] == ["x", "y"]


BAD_FINGERPRINTS = {  # a and b, the error, and a fragment of the message
    "not a dict": (["torch"], {}, TypeError, "a must be a dict of settings"),
    "a key not a str": ({"torch": "2.13"}, {1: "x"}, TypeError, "b has a key that is not a str: 1"),
    "a list value": ({"torch": [2]}, {}, TypeError, "a['torch'] must be a str, int, float, bool or None"),
    "a NaN": ({}, {"x": math.nan}, ValueError, "b['x'] must be a finite number"),
}


@pytest.mark.parametrize("a, b, error, fragment", BAD_FINGERPRINTS.values(), ids=BAD_FINGERPRINTS)
def test_a_bad_fingerprint_gets_a_clear_error_naming_its_side(a, b, error, fragment):
    with pytest.raises(error, match=re.escape(fragment)):
        diff_fingerprints(a, b)


# ============================================================================ the command line


def test_the_command_line_prints_records_and_compares(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main([]) == 0
    shown = capsys.readouterr()
    assert "threads.intra_op" in shown.out and shown.err == ""
    assert main(["--json", "-"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record == json.loads(json.dumps(fingerprint()))
    assert main(["--json", "f.json"]) == 0 and capsys.readouterr().out == ""
    assert json.loads(Path("f.json").read_text()) == record
    Path("g.json").write_text(json.dumps({**record, "env.MKL_CBWR": "AUTO"}))
    assert main(["--diff", "f.json", "f.json"]) == 0 and "agree" in capsys.readouterr().out
    assert main(["--diff", "f.json", "g.json"]) == 1
    differ = capsys.readouterr().out
    assert "env.MKL_CBWR" in differ and "AUTO" in differ


BAD_FILES = {  # the file's content (None: no file), and a fragment of the message
    "missing": (None, "no such file"),
    "not JSON": ("{not json", "not valid JSON"),
    "not an object": ("[1, 2]", "not an object of settings"),
    "a value not a scalar": ('{"torch": [2]}', "a['torch']"),
}


@pytest.mark.parametrize("content, fragment", BAD_FILES.values(), ids=BAD_FILES)
def test_the_command_line_names_what_is_wrong_with_a_file(content, fragment, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    Path("ok.json").write_text('{"torch": "2.13"}')
    if content is not None:
        Path("bad.json").write_text(content)
    assert main(["--diff", "bad.json", "ok.json"]) == 2
    error = capsys.readouterr().err
    assert fragment in error and "Traceback" not in error


def test_python_m_helpers_fingerprint_runs_silently(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-m", "helpers.fingerprint", "--json", "f.json"],
        cwd=tmp_path, env=env, capture_output=True, text=True,
    )
    assert done.returncode == 0 and done.stdout == "" and done.stderr == ""  # no warning from runpy either
    assert json.loads((tmp_path / "f.json").read_text())["torch"] == torch.__version__


# ============================================================================ first_divergence


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
