"""seed_all: one call fixes every source of randomness a PyTorch training script has."""
from __future__ import annotations

import functools
import os
import random

import numpy as np
import torch

from msprobe.schema import MsprobeError


def seed_all(seed: int = 1234, mode: bool = False, rm_dropout: bool = True) -> None:
    """Seed random, numpy and torch (CPU and every CUDA device), set PYTHONHASHSEED; ``mode=True`` turns on
    deterministic algorithms; ``rm_dropout`` makes dropout a no-op (call before building the model)."""
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2 ** 32:
        raise MsprobeError(f"seed_all: argument 'seed': expected an integer in [0, 2**32), got {seed!r}")
    if not isinstance(mode, bool) or not isinstance(rm_dropout, bool):
        raise MsprobeError("seed_all: arguments 'mode' and 'rm_dropout': expected true or false")
    os.environ["PYTHONHASHSEED"] = str(seed)
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)
    if mode:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True)
        torch.backends.cudnn.deterministic = True
        torch.backends.cudnn.benchmark = False
    if rm_dropout:
        remove_dropout()


def _identity_dropout(input, p=0.5, training=True, inplace=False):
    return input


def _zero_dropout(original):
    """``original`` called with p = 0: the identity, still seen (and recorded) as the API it is, as in msprobe."""
    if getattr(original, "_msprobe_zero_dropout", False):  # seed_all called again
        return original

    @functools.wraps(original)
    def dropout(input, p=0.5, training=True, inplace=False):
        return original(input, 0.0, training, inplace)

    dropout._msprobe_zero_dropout = True
    return dropout


def remove_dropout() -> None:
    """Dropout becomes the identity (functional forms and the nn.Dropout modules that call them)."""
    functional = torch.nn.functional
    for name in ("dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout"):
        if hasattr(functional, name):
            setattr(functional, name, _zero_dropout(getattr(functional, name)))
    torch.dropout = _identity_dropout
    torch.Tensor.dropout = lambda self, *a, **k: self
