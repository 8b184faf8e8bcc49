"""Lesson 10's exercise checkers accept right answers and reject wrong ones with a hint."""

import torch
import torch.nn as nn

from helpers import check


def _k(model):
    return sum(layer.in_features for layer in model.modules() if isinstance(layer, nn.Linear))


def _tolerance_for(model, x):
    from helpers.compare import reduction_tolerances

    with torch.no_grad():
        scale = model(x).abs().mean().item()
    return reduction_tolerances(torch.float32, _k(model), scale=scale)


def _scale_of_inputs(model, x):
    from helpers.compare import reduction_tolerances

    return reduction_tolerances(torch.float32, _k(model), scale=x.abs().mean().item())


def _no_atol(model, x):
    return _tolerance_for(model, x)[0], 0.0


def _scale_one(model, x):
    from helpers.compare import reduction_tolerances

    return reduction_tolerances(torch.float32, _k(model))


def _changes_its_arguments(model, x):
    model.double()
    torch.set_num_threads(1)
    torch.manual_seed(123)
    return _tolerance_for(model, x.double())


RIGHT = {
    "10.1": 4 * 2.0**-24 * 32,
    "10.2": _tolerance_for,
}
WRONG = {
    "10.1": [1.3e-6, 2.0**-24, "7.6e-6"],
    "10.2": [
        lambda model, x: (1.3e-6, 1e-5),  # float32's defaults: too tight for large outputs
        lambda model, x: (1e-3, 1e-3),  # passes a 0.1% bug
        lambda model, x: (1e-5, 1e-4),  # fixed: passes the bug on small outputs
        _scale_of_inputs, _no_atol, _scale_one,
        lambda model, x: 1e-5, lambda model, x: (1e-5,), lambda model, x: (-1.0, 1.0),
        lambda model, x: (float("nan"), 1.0), lambda model, x: ("1e-5", "1e-4"), lambda model: (1e-5, 1e-4),
        (1e-5, 1e-4),
    ],
}


def test_10_2_says_whether_the_tolerance_is_too_tight_or_too_loose():
    assert "too tight" in check("10.2", lambda model, x: (1.3e-6, 1e-5)).message
    assert "atol = 0" in check("10.2", _no_atol).message
    assert "too loose" in check("10.2", lambda model, x: (1e-3, 1e-3)).message
    assert "too loose" in check("10.2", _scale_of_inputs).message


def test_10_2_hints_do_not_give_the_answer_away():
    for answer in WRONG["10.2"]:
        message = check("10.2", answer).message
        assert "in_features" not in message and "reduction_tolerances(" not in message


def test_10_2_restores_threads_and_rng_and_leaves_its_models_alone():
    threads, rng = torch.get_num_threads(), torch.random.get_rng_state()
    assert check("10.2", _changes_its_arguments).ok is True  # it was given copies
    assert check("10.2", _tolerance_for).ok is True
    assert torch.get_num_threads() == threads and torch.equal(torch.random.get_rng_state(), rng)


def test_10_2_accepts_other_sound_styles():
    # scale from the float64 output (the model is a copy), a worst-case gamma_K, and a K from the first layer
    # alone: the last passes because a 0.1% bug is hundreds of times the rounding errors (the solution
    # says so)
    def from_float64(model, x):
        from helpers.compare import reduction_tolerances

        return reduction_tolerances(torch.float32, _k(model),
                                    scale=model.double()(x.double()).abs().mean().item())

    def worst_case(model, x):
        k, u = _k(model), 2.0**-24
        with torch.no_grad():
            return k * u / (1 - k * u), k * u / (1 - k * u) * model(x).abs().mean().item()

    def first_layer(model, x):
        from helpers.compare import reduction_tolerances

        with torch.no_grad():
            scale = model(x).abs().mean().item()
        return reduction_tolerances(torch.float32, model[0].in_features, scale=scale)

    for answer in (from_float64, worst_case, first_layer):
        assert check("10.2", answer).ok is True, answer.__name__
