"""support_wrap_ops.yaml → which function objects are recorded, under which prefix and name."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import torch
from msprobe.dump.api_lists import read_api_list

SHIPPED = Path(__file__).with_name("support_wrap_ops.yaml")
# category → (namespace, entry prefix). Dunder aliases (Tensor.__add__ is Tensor.add) keep the plain name.
CATEGORIES = {
    "functional": (lambda: torch.nn.functional, "Functional"),
    "tensor": (lambda: torch.Tensor, "Tensor"),
    "torch": (lambda: torch, "Torch"),
    "distributed": (lambda: torch.distributed, "Distributed"),
}
UNSUPPORTED = ("torch_npu", "aten", "npu_distributed", "mindspeed", "vf")


def load_api_list(path: Optional[str]) -> Dict[str, List[str]]:
    source = Path(path).expanduser() if path else SHIPPED
    return read_api_list(source, tuple(CATEGORIES), UNSUPPORTED)


class ApiTable:
    """Function object → (prefix, name) for the torch-function hook; distributed names for patching."""

    def __init__(self, api_list: Dict[str, List[str]]) -> None:
        self.by_func: Dict[Any, Tuple[str, str]] = {}
        self.distributed: List[str] = list(api_list.get("distributed", []))
        for category in ("functional", "torch", "tensor"):
            namespace_of, prefix = CATEGORIES[category]
            namespace = namespace_of()
            names = sorted(api_list.get(category, []), key=lambda n: n.startswith("__"))
            for name in names:
                func = getattr(namespace, name, None)
                if func is None or not callable(func):
                    continue
                try:
                    self.by_func.setdefault(func, (prefix, name))
                except TypeError:  # unhashable callable: cannot be looked up, skip it
                    continue
