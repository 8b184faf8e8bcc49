"""Lesson 14's exercise checkers accept right answers and reject wrong ones with a hint."""

import torch
from torch.nn.modules.utils import consume_prefix_in_state_dict_if_present

from helpers import check


def plain_keys(state_dict):
    state_dict = dict(state_dict)
    consume_prefix_in_state_dict_if_present(state_dict, "_orig_mod.")
    return state_dict


def in_place_only(state_dict):
    consume_prefix_in_state_dict_if_present(state_dict, "_orig_mod.")  # returns None


def every_prefix_dot(state_dict):
    return {k.split(".", 1)[1]: v for k, v in state_dict.items()}  # breaks keys without the prefix


def values_zeroed(state_dict):
    return {k.removeprefix("_orig_mod."): torch.zeros_like(v) for k, v in state_dict.items()}


def wrong_shapes(state_dict):
    return {k.removeprefix("_orig_mod."): torch.zeros(1) for k in state_dict}


RIGHT = {
    "14.1": plain_keys,
    "14.2": (65536.0, 9),
    "14.3": [3, 3, 3, 1],
    "14.4": {"CUDA_LAUNCH_BLOCKING", "CUBLAS_WORKSPACE_CONFIG"},
}

WRONG = {
    "14.1": [in_place_only, every_prefix_dot, values_zeroed, wrong_shapes, lambda sd: sd],
    "14.2": [(131072.0, 9), (65536.0, 10), (262144.0, 9), (32768.0, 9), 65536.0],
    "14.3": [[3, 3, 2, 2], [4, 4, 2, 0], [3, 3, 3], [2, 2, 2, 2]],
    "14.4": [{"CUDA_LAUNCH_BLOCKING"}, {"use_deterministic_algorithms", "CUBLAS_WORKSPACE_CONFIG"},
             {"CUDA_LAUNCH_BLOCKING", "CUBLAS_WORKSPACE_CONFIG", "cudnn.deterministic"}, {"seed"}],
}


def test_exercise_2s_answer_is_what_a_real_gradscaler_does():
    weight = torch.nn.Parameter(torch.ones(1))
    optimizer = torch.optim.SGD([weight], lr=0.01)
    scaler = torch.amp.GradScaler("cpu", init_scale=65536.0, growth_interval=4)
    scales, updates = [], 0
    for step in range(10):
        optimizer.zero_grad()
        scaler.scale(weight.sum() * (float("inf") if step == 5 else 1.0)).backward()
        scales.append(scaler.get_scale())
        before = weight.detach().clone()
        scaler.step(optimizer)
        scaler.update()
        updates += not torch.equal(before, weight.detach())
    assert (scales[9], updates) == RIGHT["14.2"] and scales[4] == 131072.0
    assert check("14.2", (scales[9], updates)).ok


def test_exercise_3s_answer_is_torch_chunk():
    assert [t.shape[0] for t in torch.empty(10, 16).chunk(4)] == RIGHT["14.3"]


def test_the_checkers_take_a_list_for_a_pair_and_numpys_numbers():
    import numpy as np

    assert check("14.2", [65536, 9]).ok
    assert check("14.3", [np.int64(3), np.int64(3), np.int64(3), np.int64(1)]).ok
    assert not check("14.3", [True, 3, 3, 3]).ok and not check("14.3", [3.0, 3, 3, 1]).ok
    assert check("14.2", (np.float32(65536.0), np.int64(9))).ok
    assert check("14.2", (torch.tensor(65536.0), 9)).ok
    assert not check("14.2", (True, 9)).ok
    assert "both" in check("14.4", set()).message
