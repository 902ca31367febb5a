"""support_wrap_ops.yaml → which function objects are recorded, under which prefix and name.

The default is msprobe 26.2.0's set: its API list (``support_wrap_ops.yaml``) less the APIs its default
``risk_level`` (``FOCUS``) leaves out at L1 and mix: reshapes, views, dtype conversions, factories
(``LOW_RISK``). ``risk_level: CORE`` keeps only ``CORE`` (and the collectives), ``ALL`` the whole list; as
in msprobe, a ``scope`` or ``list`` in the task block turns the filter off. ``record_all_apis`` records
every overridable torch API instead (``support_wrap_ops_all.yaml``), with no filter.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

import torch
from msprobe.dump.api_lists import read_api_list

SHIPPED = Path(__file__).with_name("support_wrap_ops.yaml")
EVERY = Path(__file__).with_name("support_wrap_ops_all.yaml")
# category → (namespace, entry prefix). Dunder aliases (Tensor.__ne__ is Tensor.ne) keep the plain name;
# Python's operators reach the mode under their own names through operators.py.
CATEGORIES = {
    "functional": (lambda: torch.nn.functional, "Functional"),
    "tensor": (lambda: torch.Tensor, "Tensor"),
    "torch": (lambda: torch, "Torch"),
    "distributed": (lambda: torch.distributed, "Distributed"),
}
UNSUPPORTED = ("torch_npu", "aten", "npu_distributed", "mindspeed", "vf", "_VF")
RISK_LEVELS = ("CORE", "FOCUS", "ALL")

# msprobe 26.2.0's risk classes, by API name (whatever the prefix). Its core set names "chain_matmul" and
# "linear" as adjacent string literals, which Python joins: neither is core there, so neither is here.
CORE = frozenset((
    "_fused_adamw_", "_fused_adam_", "matmul", "__matmul__", "bmm", "addmm", "addmm_", "addbmm", "addbmm_",
    "baddbmm", "baddbmm_", "mm", "mv", "addmv", "addmv_", "addr", "addr_", "conv1d", "conv2d", "conv3d",
    "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "conv_tbc", "convolution", "_convolution",
    "bilinear", "linalg.matmul", "linalg.multi_dot", "linalg.vecdot", "batch_norm", "instance_norm",
    "layer_norm", "group_norm", "local_response_norm", "_batch_norm_impl_index", "batch_norm_elemt",
    "batch_norm_stats", "batch_norm_update_stats", "batch_norm_gather_stats",
    "batch_norm_gather_stats_with_counts", "batch_norm_backward_elemt", "batch_norm_backward_reduce",
    "embedding", "embedding_bag", "multi_head_attention_forward", "scaled_dot_product_attention",
))
LOW_RISK = frozenset((
    "squeeze", "unsqueeze", "reshape", "reshape_as", "view", "view_as", "flatten", "unflatten", "expand",
    "expand_as", "repeat", "repeat_interleave", "tile", "transpose", "permute", "moveaxis", "movedim",
    "swapaxes", "swapdims", "chunk", "unsafe_chunk", "split", "split_with_sizes", "unsafe_split",
    "unsafe_split_with_sizes", "tensor_split", "hsplit", "vsplit", "dsplit", "unbind", "stack", "cat",
    "concat", "concatenate", "hstack", "vstack", "dstack", "column_stack", "row_stack", "align_as",
    "align_to", "atleast_1d", "atleast_2d", "atleast_3d", "ravel", "clamp", "unfold", "type_as", "to",
    "float", "double", "int", "long", "half", "bfloat16", "byte", "char", "bool", "cfloat", "numpy", "empty",
    "empty_like", "zeros", "zeros_like", "ones", "ones_like", "full", "full_like", "arange", "linspace",
    "logspace", "eye", "identity", "diag", "diagflat", "diag_embed", "triu", "tril", "triu_indices",
    "tril_indices", "clone", "__bool__", "stride",
))


def load_api_list(path: Optional[str], every: bool = False) -> Dict[str, List[str]]:
    """The user's list (``path``), else the shipped one: msprobe's, or every overridable API (``every``)."""
    source = Path(path).expanduser() if path else (EVERY if every else SHIPPED)
    return read_api_list(source, tuple(CATEGORIES), UNSUPPORTED)


def risk_filter(risk_level: str, api_list: Dict[str, List[str]]) -> Callable[[str], bool]:
    """Whether an API name of the list is recorded at ``risk_level`` (msprobe's rule: the collectives of
    the list count as core)."""
    if risk_level == "ALL":
        return lambda name: True
    if risk_level == "CORE":
        core = CORE | set(api_list.get("distributed", []))
        return core.__contains__
    return lambda name: name not in LOW_RISK


def effective_risk_level(config: Any) -> str:
    """The filter a configuration asks for: none (``ALL``) with ``record_all_apis`` or a scope/list."""
    task = config.task_config
    if getattr(config, "record_all_apis", False) or task.scope or task.list:
        return "ALL"
    return getattr(config, "risk_level", "FOCUS")


class ApiTable:
    """Function object → (prefix, name) for the torch-function hook; distributed names for patching;
    ``operators``: the wrappers of Python's tensor operators (operators.py), by name."""

    def __init__(self, api_list: Dict[str, List[str]], risk_level: str = "FOCUS") -> None:
        recorded = risk_filter(risk_level, api_list)
        self.by_func: Dict[Any, Tuple[str, str]] = {}
        self.distributed: List[str] = [n for n in api_list.get("distributed", []) if recorded(n)]
        self.tensor_names: Set[str] = {n for n in api_list.get("tensor", []) if recorded(n)}
        self.operators: Dict[str, Any] = {}
        for category in ("functional", "torch", "tensor"):
            namespace_of, prefix = CATEGORIES[category]
            namespace = namespace_of()
            names = sorted((n for n in api_list.get(category, []) if recorded(n)), key=lambda n: n.startswith("__"))
            for name in names:
                func = getattr(namespace, name, None)
                if func is None or not callable(func):
                    continue
                # a function replaced by a wrapper of it (seed_all's dropout) is seen as either one
                for seen in (func, getattr(func, "__wrapped__", None)):
                    if seen is None:
                        continue
                    try:
                        self.by_func.setdefault(seen, (prefix, name))
                    except TypeError:  # unhashable callable: cannot be looked up, skip it
                        continue

    def add_operator(self, name: str, wrapper: Any) -> None:
        """``wrapper`` stands for ``Tensor.{name}`` while it is installed; recorded if the list has it."""
        self.operators[name] = wrapper
        if name in self.tensor_names:
            self.by_func[wrapper] = ("Tensor", name)
