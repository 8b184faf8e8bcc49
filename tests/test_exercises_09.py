"""Lesson 09's exercise checkers accept right answers and reject wrong ones with a hint."""

import torch

from helpers import check


RIGHT = {
    "09.1": 2,
    "09.2": 4,
    "09.3": torch.inference_mode,
    "09.4": 65280,
    "09.5": 24448,
}
WRONG = {
    "09.1": [4, 1, "2", 2.0],
    "09.2": [0.25, 2, "4"],
    "09.3": [torch.no_grad, "torch.inference_mode", torch.enable_grad],
    "09.4": [32640, -65280, 32767, "65280", 65280.0],
    "09.5": [12224, 12033, 8192, 24066, -24448, 32767, "24448", 24448.0],
}
