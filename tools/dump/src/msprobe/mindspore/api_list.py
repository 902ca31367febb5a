"""support_wrap_ops*.yaml → which MindSpore / MSAdapter callables are wrapped, under which entry prefix.

Native MindSpore uses ``support_wrap_ops.yaml`` (categories ``ops``, ``tensor``, ``mint.ops``,
``mint.nn.functional``, ``communication.comm_func``, ``mint.distributed``); torch code on MindSpore
(MSAdapter / MindTorch) uses ``support_wrap_ops_mindtorch.yaml`` (``torch``, ``functional``, ``tensor``,
``distributed``). ``api_list`` in config.json replaces the shipped file (doc 29: removing an API is
sometimes needed because of native type checks); its categories are checked against the flavour.
"""
from __future__ import annotations

import importlib
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

from msprobe.dump.api_lists import read_api_list

HERE = Path(__file__).parent
SHIPPED = {"mindspore": HERE / "support_wrap_ops.yaml", "mindtorch": HERE / "support_wrap_ops_mindtorch.yaml"}

# category → (entry prefix, how to find the namespace); the namespace finder gets the torch package name
NATIVE_CATEGORIES: Dict[str, Tuple[str, Callable[[Optional[str]], List[object]]]] = {
    "ops": ("Functional", lambda _: _modules("mindspore.ops")),
    "tensor": ("Tensor", lambda _: _tensor_classes()),
    "mint.ops": ("Mint", lambda _: _modules("mindspore.mint")),
    "mint.nn.functional": ("MintFunctional", lambda _: _modules("mindspore.mint.nn.functional")),
    "communication.comm_func": ("Distributed", lambda _: _modules("mindspore.communication.comm_func")),
    "mint.distributed": ("Distributed", lambda _: _modules("mindspore.mint.distributed")),
}
TORCH_CATEGORIES: Dict[str, Tuple[str, Callable[[Optional[str]], List[object]]]] = {
    "torch": ("Torch", lambda pkg: _modules(pkg)),
    "functional": ("Functional", lambda pkg: _modules(f"{pkg}.nn.functional")),
    "tensor": ("Tensor", lambda pkg: [importlib.import_module(pkg).Tensor]),
    "distributed": ("Distributed", lambda pkg: _modules(f"{pkg}.distributed")),
    "torch_npu": ("NPU", lambda pkg: _modules("torch_npu")),
}


def categories(flavour: str) -> Dict[str, Tuple[str, Callable[[Optional[str]], List[object]]]]:
    return TORCH_CATEGORIES if flavour == "mindtorch" else NATIVE_CATEGORIES


def _modules(name: str) -> List[object]:
    try:
        return [importlib.import_module(name)]
    except ImportError:
        if name != "torch_npu":  # (absent wherever there is no Ascend: nothing is lost)
            from .internals import missing
            missing(f"module {name}", "the APIs the API list names in it are not dumped")
        return []


def _tensor_classes() -> List[object]:
    from .internals import tensor_types
    return list(tensor_types())


def load_api_list(path: Optional[str], flavour: str) -> Dict[str, List[str]]:
    """Category → API names, from the user's file or the shipped one of this flavour."""
    source = Path(path).expanduser() if path else SHIPPED[flavour]
    return read_api_list(source, tuple(categories(flavour)), flavour=flavour)
