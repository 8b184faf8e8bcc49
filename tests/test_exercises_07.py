"""Lesson 07's exercise checkers accept right answers and reject wrong ones with a hint."""

import tempfile

import pytest
import torch
import torch.serialization as ser
from torch.nn.modules.utils import consume_prefix_in_state_dict_if_present

from helpers import check
from helpers.exercises import lesson07


def _strip(state):
    before = None
    while before != list(state):
        before = list(state)
        for prefix in ("module.", "_orig_mod."):
            consume_prefix_in_state_dict_if_present(state, prefix)
    return state


def _read(path, **kwargs):
    state = torch.load(path, **kwargs)
    return state["model"] if "model" in state else state


def load_weights(model, path):
    model.load_state_dict(_strip(_read(path, map_location="cpu", weights_only=True)))
    return model


def _load_weights_mapping_tags(model, path):  # the callable form of map_location: right too
    model.load_state_dict(_strip(_read(path, map_location=lambda storage, tag: storage)))
    return model


def _no_map_location(model, path):
    model.load_state_dict(_strip(_read(path)))
    return model


def _not_weights_only(model, path):
    model.load_state_dict(_strip(_read(path, map_location="cpu", weights_only=False)))
    return model


def _one_pass(model, path):  # strips module. then _orig_mod., once
    state = _read(path, map_location="cpu")
    for prefix in ("module.", "_orig_mod."):
        consume_prefix_in_state_dict_if_present(state, prefix)
    model.load_state_dict(state)
    return model


def _replace(model, path):
    state = _read(path, map_location="cpu")
    model.load_state_dict({k.replace("module.", "").replace("_orig_mod.", ""): v for k, v in state.items()})
    return model


def _lstrip(model, path):
    state = _read(path, map_location="cpu")
    # the mistake this wrong answer makes: lstrip strips any leading run of these characters, not a prefix
    model.load_state_dict({k.lstrip("module.").lstrip("_origmd."): v for k, v in state.items()})
    return model


def _not_strict(model, path):
    model.load_state_dict(_strip(_read(path, map_location="cpu")), strict=False)
    return model


def _ignores_nesting(model, path):
    model.load_state_dict(_strip(torch.load(path, map_location="cpu")))
    return model


def _drops_unexpected_keys(model, path):  # strict, but only after filtering: an unexpected key is lost
    state = _strip(_read(path, map_location="cpu"))
    model.load_state_dict({k: v for k, v in state.items() if k in model.state_dict()})
    return model


def _hides_the_refusal(model, path):  # weights_only=True, but the refusal never reaches the caller
    import pickle

    try:
        return load_weights(model, path)
    except pickle.UnpicklingError:
        return model


def _returns_nothing(model, path):
    load_weights(model, path)


def _loads_into_a_copy(model, path):
    import copy

    return load_weights(copy.deepcopy(model), path)


def _hides_every_error(model, path):
    try:
        return load_weights(model, path)
    except Exception:
        return model


RIGHT = {
    "07.1": "error",
    "07.2": load_weights,
}
WRONG = {
    "07.1": ["partial", "nothing", "raises", True, 0],
    "07.2": [_no_map_location, _not_weights_only, _one_pass, _replace, _lstrip, _not_strict, _ignores_nesting,
             _drops_unexpected_keys, _hides_the_refusal, _returns_nothing, _loads_into_a_copy,
             _hides_every_error, torch.load, "load_weights"],
}

#: The case each wrong answer fails on, as its hint names it (the idea, not the code).
NAMED = {
    _no_map_location: "saved on a GPU",
    _not_weights_only: "ran code",
    _one_pass: "'_orig_mod.module.'",
    _replace: "saved on the CPU",
    _lstrip: "saved on the CPU",
    _not_strict: "lacks the key",
    _drops_unexpected_keys: "a key the model does not have",
    _hides_the_refusal: "let the refusal reach the caller",
    _ignores_nesting: "training checkpoint",
    _returns_nothing: "return the model",
    _loads_into_a_copy: "return the model",
}


def test_07_2_accepts_another_right_way_to_map_the_storages():
    assert check("07.2", _load_weights_mapping_tags).ok is True


@pytest.mark.parametrize("wrong", list(NAMED), ids=[f.__name__ for f in NAMED])
def test_07_2_hints_name_the_failing_case_without_the_code(wrong):
    message = check("07.2", wrong).message
    assert NAMED[wrong] in message
    assert "consume_prefix" not in message and "startswith" not in message


def test_07_2_leaves_no_files_no_rng_change_and_no_extra_serialization_tagger(tmp_path, monkeypatch):
    # a private temporary folder: other workers' checks of 07.2 make their own folders in the shared one
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    registry, rng = list(ser._package_registry), torch.get_rng_state()
    for answer in (load_weights, _not_weights_only, _no_map_location, _hides_every_error):
        check("07.2", answer)
    assert ser._package_registry == registry and torch.equal(torch.get_rng_state(), rng)
    assert list(tmp_path.iterdir()) == []
    assert lesson07._CODE_RAN == []


def test_07_2_gpu_cases_ask_for_a_gpu_this_machine_lacks():
    # cuda:0 without CUDA, as a save on the first GPU tags it; with CUDA, an index past the last GPU, so that
    # a loader without map_location fails here too
    expected = f"cuda:{torch.cuda.device_count()}" if torch.cuda.is_available() else "cuda:0"
    assert lesson07._missing_gpu_tag() == expected
    with tempfile.TemporaryDirectory() as folder:
        cases = lesson07._cases(__import__("pathlib").Path(folder))
        on_gpu = [path for what, path, _ in cases if "GPU" in what]
        assert len(on_gpu) == 3
        for path in on_gpu:
            tags = []
            torch.load(path, map_location=lambda storage, tag, tags=tags: tags.append(tag) or storage)
            assert tags and set(tags) == {expected}
            with pytest.raises(RuntimeError, match="map_location"):
                torch.load(path)


def test_07_2_hints_do_not_say_that_strict_loading_loads_nothing():
    # strict loading copies every tensor that fits before it raises (exercise 1): no hint may say otherwise
    for wrong in (_not_strict, _drops_unexpected_keys, _hides_the_refusal):
        message = check("07.2", wrong).message
        assert "instead of loading" not in message and "rather than loading" not in message


def test_07_1_truth_is_what_load_state_dict_does():
    outcome, changed = lesson07.strict_false_with_a_wider_layer()
    assert outcome == "error" and changed == ["0.weight", "0.bias"]
