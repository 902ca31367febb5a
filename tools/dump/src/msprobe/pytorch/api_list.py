"""support_wrap_ops.yaml → which function objects are recorded, under which prefix and name."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import torch
import yaml

from msprobe.schema import SchemaError

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
    try:
        doc = yaml.safe_load(source.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SchemaError(source, None, f"cannot read the API list: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise SchemaError(source, None, f"invalid YAML: {str(exc).splitlines()[0]}") from None
    if not isinstance(doc, dict):
        raise SchemaError(source, None, "expected categories (functional, tensor, torch, distributed) of API names")
    out: Dict[str, List[str]] = {}
    for category, names in doc.items():
        if category not in CATEGORIES and category not in UNSUPPORTED:
            raise SchemaError(source, category, f"unknown category; expected one of {', '.join(CATEGORIES)}")
        if names is None:
            names = []
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise SchemaError(source, category, "expected a list of API names", names, has_got=True)
        if category in CATEGORIES:
            out[category] = names
    return out


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
