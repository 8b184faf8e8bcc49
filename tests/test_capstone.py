"""Lesson 12's script: each planted cause changes the result, each fix removes it; its checkers explain.

The training runs are small (20 steps on 256 bags), so the causes are tested directly on
``helpers.lessons.capstone.train``; the hunt of section 12.6 on ``load``, ``server_model`` and the
``laptop`` and ``server`` commands. The checkers of exercises 12.1 to 12.3 are tested in
``tests/test_exercises_12.py``.
"""

from __future__ import annotations

import dataclasses
import os

import pytest
import torch

from helpers.determinism import deterministic_mode
from helpers.diagnose import first_divergence
from helpers.lessons import capstone

FIXES = {"deterministic": True, "data_seed": 0, "stats_as_buffers": True, "eval_after_load": True}
FIXED = dataclasses.replace(capstone.A, **FIXES)
SERVED = dataclasses.replace(FIXED, from_checkpoint=True)  # the fixed server: loads a checkpoint


def same(x: capstone.Result, y: capstone.Result) -> bool:
    return x.losses == y.losses and torch.equal(x.predictions, y.predictions)


@pytest.fixture(scope="module")
def reference() -> capstone.Result:
    return capstone.train(FIXED)


def test_the_fixed_configuration_repeats_itself_and_survives_the_checkpoint(reference):
    assert same(capstone.train(FIXED), reference)
    assert same(capstone.train(SERVED), reference)


def test_a_and_b_as_shipped_differ_far_beyond_rounding():
    a, b = capstone.train(capstone.A), capstone.train(capstone.B)
    assert (a.predictions - b.predictions).abs().max() > 1e-3


def test_cause_bf16_autocast_changes_the_result(reference):
    assert not same(capstone.train(dataclasses.replace(SERVED, bf16=True)), reference)


def test_cause_global_generator_in_the_dataset_and_its_fix():
    unseeded = dataclasses.replace(FIXED, data_seed=None)
    first = capstone.train(unseeded)
    torch.rand(1)  # any other draw between the runs
    assert not same(capstone.train(unseeded), first)
    first = capstone.train(FIXED)
    torch.rand(1)
    assert same(capstone.train(FIXED), first)


def test_cause_plain_attributes_are_not_in_the_checkpoint(reference):
    plain = dataclasses.replace(SERVED, stats_as_buffers=False)
    assert not any(k.startswith("standardise") for k in capstone.Net(plain).state_dict())
    assert not same(capstone.train(plain), reference)
    assert {"standardise.mean", "standardise.std"} <= set(capstone.Net(SERVED).state_dict())


def test_cause_reloaded_model_left_in_training_mode(reference):
    careless = dataclasses.replace(SERVED, eval_after_load=False)
    model = capstone.train(FIXED).model
    assert capstone.serve(model, careless).training and not capstone.serve(model, SERVED).training
    assert not same(capstone.train(careless), reference)


def test_first_divergence_finds_each_model_cause_in_order():
    def locate(**changes):
        a = dataclasses.replace(capstone.A, **changes)
        b = dataclasses.replace(capstone.B, **changes)
        model = capstone.train(a).model
        found = first_divergence(capstone.serve(model, a), capstone.serve(model, b), capstone.test_bags())
        return found.module

    assert locate() == "standardise"
    assert locate(stats_as_buffers=True) == "drop"
    assert locate(stats_as_buffers=True, eval_after_load=True) is None  # bfloat16 within its own rounding


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="atomic additions race only on two or more cores")
def test_cause_thread_count_the_pool_adds_atomically_and_deterministic_mode_fixes_it():
    g = torch.Generator().manual_seed(0)
    items, owner = capstone.flatten(torch.rand(32, capstone.ITEMS, capstone.FEATURES, generator=g))
    h = torch.rand(items.shape[0], 32, generator=g)
    pool, threads = capstone.SumPerBag().requires_grad_(False), torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        serial = pool(h, owner)
        torch.set_num_threads(4)
        racing = {pool(h, owner).numpy().tobytes() for _ in range(50)}
        with deterministic_mode():
            fixed = [pool(h, owner) for _ in range(5)]
    finally:
        torch.set_num_threads(threads)
    assert len(racing) > 1 or serial.numpy().tobytes() not in racing
    assert all(torch.equal(f, serial) for f in fixed)


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="atomic additions race only on two or more cores")
def test_cause_thread_count_changes_b_with_its_bfloat16_autocast():
    # B's own setting (bf16=True), only the global generator removed: the pool's race must reach the result
    racing_config = dataclasses.replace(capstone.B, data_seed=0)
    serial = capstone.train(dataclasses.replace(racing_config, deterministic=True)).predictions
    racing = set()
    for _ in range(12):
        racing.add(capstone.train(racing_config).predictions.numpy().tobytes())
        if len(racing) > 1 or serial.numpy().tobytes() not in racing:
            break
    assert len(racing) > 1 or serial.numpy().tobytes() not in racing


def test_configured_restores_threads_and_determinism():
    before = (torch.get_num_threads(), torch.are_deterministic_algorithms_enabled())
    with capstone.configured(dataclasses.replace(capstone.B, deterministic=True)):
        assert torch.get_num_threads() == 4 and torch.are_deterministic_algorithms_enabled()
    assert (torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()) == before


def test_serve_refuses_a_model_built_with_other_code():
    model = capstone.Net(capstone.A)
    with pytest.raises(ValueError, match="stats_as_buffers"):
        capstone.serve(model, SERVED)


# --- Section 12.6, the hunt: the server's three hidden causes, each found by its tool -----------------


@pytest.fixture(scope="module")
def checkpoint() -> dict[str, torch.Tensor]:
    return capstone.train(capstone.SERVING).model.state_dict()


def predict(model: torch.nn.Module) -> torch.Tensor:
    with capstone.configured(capstone.SERVING), torch.no_grad():
        return model(*capstone.test_bags())


def test_the_laptop_serves_the_trained_model_bit_for_bit(checkpoint):
    assert capstone.SERVING == dataclasses.replace(FIXED, name="serving")
    assert torch.equal(predict(capstone.load(checkpoint)), capstone.train(FIXED).predictions)


def test_the_server_fingerprint_differs_in_default_dtype_and_cudnn_benchmark(checkpoint, tmp_path):
    import json
    import subprocess
    import sys

    path = tmp_path / "ckpt.pt"
    torch.save(checkpoint, path)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    records = {}
    for side in ("laptop", "server"):
        out = tmp_path / f"{side}.json"
        subprocess.run([sys.executable, "-m", "helpers.lessons.capstone", side, str(path), str(out)],
                       env=env, check=True, capture_output=True)
        records[side] = json.loads(out.read_text())
    from helpers.fingerprint import diff_fingerprints

    rows = diff_fingerprints(records["laptop"]["fingerprint"], records["server"]["fingerprint"]).rows
    assert [tuple(row) for row in rows] == [("default_dtype", "float32", "float64"),
                                            ("deterministic.cudnn_benchmark", False, True)]
    assert records["laptop"]["predictions"] == capstone.train(FIXED).predictions.tolist()
    pairs = zip(records["laptop"]["predictions"], records["server"]["predictions"], strict=True)
    gap = max(abs(x - y) for x, y in pairs)
    assert gap > 1e-3


def test_the_default_dtype_alone_changes_the_laptops_predictions(checkpoint):
    before = torch.get_default_dtype()
    try:
        torch.set_default_dtype(torch.float64)
        model, bags = capstone.load(checkpoint), capstone.test_bags()
        predictions = predict(model)
    finally:
        torch.set_default_dtype(before)
    assert model.head.weight.dtype == torch.float64 and bags[0].dtype == torch.float64
    assert (predictions.float() - predict(capstone.load(checkpoint))).abs().max() > 1e-3


def test_cudnn_benchmark_alone_changes_no_prediction_of_the_laptops_model(checkpoint):
    before = torch.backends.cudnn.benchmark
    try:
        torch.backends.cudnn.benchmark = True
        predictions = predict(capstone.load(checkpoint))
    finally:
        torch.backends.cudnn.benchmark = before
    assert torch.equal(predictions, predict(capstone.load(checkpoint)))


def test_the_servers_standardise_is_a_same_named_class_of_its_own_module_far_beyond_tolerance(checkpoint):
    from helpers.lessons import capstone_server

    reference, served = capstone.load(checkpoint), capstone.server_model(checkpoint)
    assert type(served.standardise) is capstone_server.Standardise
    assert type(served.standardise).__name__ == "Standardise" and capstone_server.EPS == 1e-3
    with capstone.configured(capstone.SERVING):
        row = first_divergence(reference, served, capstone.test_bags()).table.rows[0]
    assert row[0] == "standardise" and row[1] == "Standardise / Standardise"
    assert row[4] > 100 * row[6]  # the error is hundreds of times the tolerance: not a matter of its K


def test_first_divergence_finds_the_servers_two_model_causes_one_after_the_other(checkpoint):
    import copy

    reference, served = capstone.load(checkpoint), capstone.server_model(checkpoint)
    bags = capstone.test_bags()
    with capstone.configured(capstone.SERVING):
        assert first_divergence(reference, served, bags).module == "standardise"
        copied = copy.deepcopy(served)  # the state is the reference's: loading it changes nothing
        assert all(torch.equal(v, reference.standardise.state_dict()[k])
                   for k, v in copied.standardise.state_dict().items())
        copied.standardise.load_state_dict(reference.standardise.state_dict())
        assert first_divergence(reference, copied, bags).module == "standardise"
        copied.standardise = copy.deepcopy(reference.standardise)  # the reference's code: next one
        assert first_divergence(reference, copied, bags).module == "pool"
        assert torch.equal(copied.pool.weight, torch.ones(32))
        assert not torch.equal(reference.pool.weight, torch.ones(32))
        weight = reference.pool.weight  # not a rounding: neither rounded copy equals the served weight
        assert not torch.equal(copied.pool.weight, weight.bfloat16().float())
        assert not torch.equal(copied.pool.weight, weight.half().float())
        copied.pool.load_state_dict(reference.pool.state_dict())
        assert first_divergence(reference, copied, bags).module is None
    assert torch.equal(predict(copied), predict(reference))


def test_each_model_cause_alone_changes_the_predictions(checkpoint):
    reference = predict(capstone.load(checkpoint))
    formula = capstone.server_model(checkpoint)
    formula.load_state_dict(checkpoint)  # every weight, so only the formula differs
    assert not torch.equal(predict(formula), reference)
    not_loaded = capstone.load(checkpoint)
    not_loaded.pool.weight.data.fill_(1.0)
    assert not torch.equal(predict(not_loaded), reference)
