"""helpers.moving: moving nested structures, and finding tensors a module move leaves behind."""

from __future__ import annotations

import dataclasses
import re
from collections import OrderedDict, namedtuple

import pytest
import torch

from helpers.moving import check_one_device, move, stray_tensors, tensor_places

Pair = namedtuple("Pair", "left right")


@dataclasses.dataclass
class Batch:
    images: torch.Tensor
    labels: torch.Tensor
    note: str = "kept"


def test_move_walks_every_container_and_keeps_its_type():
    data = {
        "list": [torch.ones(2), 3],
        "tuple": (torch.zeros(1),),
        "pair": Pair(torch.ones(1), "x"),
        "batch": Batch(torch.ones(2, 2), torch.tensor([1, 2])),
        "ordered": OrderedDict(a=torch.ones(1)),
    }
    moved = move(data, "meta", torch.float64)
    assert moved["list"][0].device.type == "meta" and moved["list"][0].dtype == torch.float64
    assert moved["list"][1] == 3 and isinstance(moved["tuple"], tuple)
    assert isinstance(moved["pair"], Pair) and moved["pair"].right == "x"
    assert isinstance(moved["batch"], Batch) and moved["batch"].note == "kept"
    assert moved["batch"].labels.dtype == torch.int64  # integers keep their dtype
    assert isinstance(moved["ordered"], OrderedDict)
    assert data["list"][0].device.type == "cpu"  # the original is untouched


def test_move_returns_a_tensor_already_in_place_itself():
    t = torch.ones(3)
    assert move(t, "cpu") is t and move([t], "cpu")[0] is t


class Leaky(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(2, 2)
        self.register_buffer("scale", torch.ones(2), persistent=False)
        self.offset = torch.zeros(2)  # a plain attribute: .to() does not move it
        self.table = {"a": torch.ones(1), "b": [torch.ones(1)]}


def test_stray_tensors_names_plain_attributes_and_containers():
    strays = stray_tensors(Leaky())
    assert [s.name for s in strays] == ["offset", "table['a']", "table['b'][0]"]
    assert all(s.device.type == "cpu" for s in strays) and str(strays[0]) == "offset (cpu)"
    nested = torch.nn.Sequential(Leaky())
    assert [s.name for s in stray_tensors(nested)][0] == "0.offset"
    loop: list = [torch.ones(1)]
    loop.append(loop)  # a list that holds itself is searched once
    nested[0].table = loop
    assert [s.name for s in stray_tensors(nested)] == ["0.offset", "0.table[0]"]


def test_check_one_device_names_the_offenders():
    module = Leaky()
    assert check_one_device(module) == torch.device("cpu")
    module.to("meta")  # parameters and buffers move, the strays stay on the CPU
    with pytest.raises(ValueError) as err:
        check_one_device(module)
    message = str(err.value)
    assert "not on meta" in message and "offset (not a parameter or buffer) on cpu" in message
    assert "linear.weight" not in message and "scale" not in message


def test_check_one_device_on_a_clean_module():
    assert check_one_device(torch.nn.Linear(2, 2).to("meta")) == torch.device("meta")


T = torch.ones(1)
NOT_A_MODULE = "module must be a torch.nn.Module"
ABSENT_DEVICE = "mps" if torch.cuda.is_available() else "cuda"  # a device this machine lacks
BAD_INPUTS = {  # a call, the error it must raise, and a fragment of the message
    "move: nothing to do": (lambda: move(T), ValueError, "give a device, a dtype, or both"),
    "move: an integer dtype": (lambda: move(T, dtype=torch.int32), ValueError, "floating-point dtype"),
    "move: a dtype by name": (lambda: move(T, dtype="float64"), TypeError, "dtype must be a torch.dtype"),
    "move: an unknown device": (lambda: move(T, "gpu"), ValueError, "device is not a device torch knows"),
    "move: a float device": (lambda: move(T, 0.5), TypeError, "device must be a str or a torch.device"),
    "move: a device this machine lacks": (lambda: move(T, ABSENT_DEVICE), ValueError, "not available"),
    "stray_tensors: not a module": (lambda: stray_tensors("model"), TypeError, NOT_A_MODULE),
    "check_one_device: not a module": (lambda: check_one_device(T), TypeError, NOT_A_MODULE),
    "check_one_device: no tensors": (lambda: check_one_device(torch.nn.ReLU()), ValueError, "no tensors"),
}


@pytest.mark.parametrize("call, error, fragment", BAD_INPUTS.values(), ids=BAD_INPUTS)
def test_bad_input_gets_a_clear_error(call, error, fragment):
    with pytest.raises(error, match=re.escape(fragment)):
        call()


def test_tensor_places_lists_parameters_gradients_and_buffers():
    bn = torch.nn.BatchNorm1d(2)
    assert [r[0] for r in tensor_places(bn).rows] == [
        "weight", "bias", "running_mean", "running_var", "num_batches_tracked"
    ]  # no gradient yet, so no gradient rows
    bn(torch.arange(6.0).reshape(3, 2)).sum().backward()
    for p in bn.parameters():
        p.data = p.data.double()  # the loop lesson 06 rebuts: gradients and buffers stay float32
    table = tensor_places(bn, title="t")
    rows = {r[0]: (r[1], r[3]) for r in table.rows}
    assert rows["weight"] == ("parameter", torch.float64)
    assert rows["weight.grad"] == ("gradient", torch.float32)
    assert rows["running_mean"] == ("buffer", torch.float32) and rows["num_batches_tracked"][1] == torch.int64
    assert table.title == "t" and table.headers == ["tensor", "kind", "device", "dtype"]
    bn.double()  # Module.to converts all three kinds
    assert {r[3] for r in tensor_places(bn).rows if r[0] != "num_batches_tracked"} == {torch.float64}


def test_move_keeps_a_defaultdict_and_its_default_factory():
    from collections import defaultdict

    data = defaultdict(list, {"a": torch.ones(2)})
    moved = move(data, "meta", torch.float64)
    assert type(moved) is defaultdict and moved.default_factory is list
    assert moved["a"].device.type == "meta" and moved["a"].dtype == torch.float64
    assert moved["missing"] == []
