"""Which callable each side runs: the framework under test, and the torch API that serves as its bench.

The seed doc asks for APIs whose arguments are the torch API's (``Mint.split``, ``Functional.softmax``,
``Tensor.add``, ``Torch.matmul``): the bench is the torch API of the same name with the same arguments.
MindSpore's ``ops``/Tensor spellings that differ from torch's only by name are mapped (``transpose`` is
torch's ``permute``, ``axis`` is ``dim``); anything else without a torch counterpart of the same
signature is refused at generation with a message, never turned into a wrong script.

A dump may come from anyone: an API name reaches a script only when its parts are plain identifiers and
its torch bench is in the known API table (``api_table.py``), with or without torch installed here.
"""
from __future__ import annotations

import importlib.util
import inspect
import re
from dataclasses import dataclass
from typing import Any, Dict, List, Tuple

from msprobe.schema import EntryName, MsprobeError, parse_entry

from .api_table import known

TESTED_MODULES = {
    "mindspore": {"Mint": "mindspore.mint", "MintFunctional": "mindspore.mint.nn.functional",
                  "Functional": "mindspore.ops"},
    "mindtorch": {"Torch": "msadapter.pytorch", "Functional": "msadapter.pytorch.nn.functional"},
    "pytorch": {"Torch": "torch", "Functional": "torch.nn.functional"},
}
BENCH_MODULES = {
    "Mint": ("torch",), "MintFunctional": ("torch.nn.functional",),
    "Functional": ("torch.nn.functional", "torch"), "Torch": ("torch",),
}
# MindSpore names whose torch namesake takes other arguments (or has another name).
MINDSPORE_RENAMES = {("Functional", "transpose"): "permute", ("Tensor", "astype"): "to",
                     ("Functional", "concat"): "cat", ("Tensor", "transpose"): "permute"}
MINDSPORE_KWARG_RENAMES = {"axis": "dim", "keep_dims": "keepdim", "keepdims": "keepdim"}
TENSOR_PREFIX = "Tensor"
API_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+\.[0-9]{1,9}", re.ASCII)
"""``{Prefix}.{api}.{call}`` of identifiers (the api may have dotted parts, ``Aten.add.Tensor.0``): what names
the script file and goes into its code; anything else (quotes, slashes, parentheses) is no dump's API."""
IDENTIFIER_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*", re.ASCII)


def check_api_name(api_name: str) -> EntryName:
    """The parsed ``{Prefix}.{api}.{call}``; MsprobeError for a name that is not one (before it names a file)."""
    if not isinstance(api_name, str) or not API_NAME_RE.fullmatch(api_name):
        raise MsprobeError(f"API name {api_name!r}: expected '{{Prefix}}.{{api}}.{{call}}' of letters, digits and "
                           "underscores, such as 'Functional.softmax.3'")
    return parse_entry(f"{api_name}.forward")


@dataclass(frozen=True)
class ApiCall:
    """The two callables of a generated script, as source text."""

    tested: str
    """``mindspore.mint.split`` (a function) or ``.add`` (a method of the first argument)."""
    bench: str
    """``torch.split`` or ``.add``."""
    imports: Tuple[str, ...]
    kwarg_renames: Dict[str, str]
    """Keyword arguments the bench spells differently (MindSpore ``axis`` → torch ``dim``)."""


def resolve(api_name: str, framework: str, args: List[Any], kwargs: Dict[str, Any]) -> ApiCall:
    """The calls for ``api_name`` (``Functional.softmax.3``) of a ``framework`` dump; MsprobeError when the API
    cannot be reproduced against torch."""
    entry = check_api_name(api_name)
    prefix, name = entry.prefix, entry.name
    if framework not in TESTED_MODULES:
        raise MsprobeError(f"{api_name}: dump framework {framework!r} is not one op_generate reproduces "
                           f"(expected {', '.join(TESTED_MODULES)})")
    renames = MINDSPORE_KWARG_RENAMES if framework == "mindspore" and prefix in ("Functional", TENSOR_PREFIX) \
        else {}
    bench_name = MINDSPORE_RENAMES.get((prefix, name), name) if framework == "mindspore" else name
    if not IDENTIFIER_RE.fullmatch(name):
        raise MsprobeError(f"{api_name}: '{name}' is not one API op_generate can call (an overload or a "
                           "namespace); op_generate reproduces single functions and Tensor methods")
    if prefix == TENSOR_PREFIX:
        tested, bench = f".{name}", f".{bench_name}"
        _check_bench_method(api_name, bench_name)
        tested_module = {"mindspore": "mindspore", "mindtorch": "msadapter.pytorch"}.get(framework, "torch")
    else:
        module = TESTED_MODULES[framework].get(prefix)
        if module is None:
            raise MsprobeError(f"{api_name}: op_generate reproduces {', '.join(TESTED_MODULES[framework])} and "
                               f"Tensor APIs of a {framework} dump, not '{prefix}' ones")
        tested, tested_module = f"{module}.{name}", module
        bench = _bench_function(api_name, prefix, bench_name, len(args), _renamed(kwargs, renames))
    imports = tuple(sorted({tested_module.split(".")[0], "torch"}))
    return ApiCall(tested=tested, bench=bench, imports=imports, kwarg_renames=renames)


def _renamed(kwargs: Dict[str, Any], renames: Dict[str, str]) -> Dict[str, Any]:
    return {renames.get(k, k): v for k, v in kwargs.items()}


def _torch():
    """torch when the generating environment has it (it checks the bench exists), else None."""
    if importlib.util.find_spec("torch") is None:
        return None
    import torch  # imported only to check names; the script imports it again where it runs

    return torch


def _bench_function(api_name: str, prefix: str, name: str, nargs: int, kwargs: Dict[str, Any]) -> str:
    torch = _torch()
    for module in BENCH_MODULES[prefix]:
        if not known(module, name):  # the table decides, so with or without torch the same names pass
            continue
        if torch is not None:
            owner = torch.nn.functional if module == "torch.nn.functional" else torch
            function = getattr(owner, name, None)
            if not callable(function):  # (an older torch than the table's)
                continue
            _check_signature(api_name, f"{module}.{name}", function, nargs, kwargs)
        return f"{module}.{name}"
    tried = " or ".join(f"{module}.{name}" for module in BENCH_MODULES[prefix])
    raise MsprobeError(f"{api_name}: no torch counterpart ({tried} is not a torch computation in op_generate's API "
                       "table); op_generate needs a torch API with the same arguments as the bench")


def _check_bench_method(api_name: str, name: str) -> None:
    torch = _torch()
    if not known(TENSOR_PREFIX, name) or torch is not None and not callable(getattr(torch.Tensor, name, None)):
        raise MsprobeError(f"{api_name}: torch.Tensor has no method '{name}' (in op_generate's API table); "
                           "op_generate needs a torch API with the same arguments as the bench")


def _check_signature(api_name: str, qualified: str, function: Any, nargs: int, kwargs: Dict[str, Any]) -> None:
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):  # a builtin without a Python signature: the script reports a mismatch
        return
    try:
        signature.bind(*([None] * nargs), **kwargs)
    except TypeError as exc:
        raise MsprobeError(f"{api_name}: {qualified} does not take the dumped arguments ({exc}); no torch "
                           "counterpart of the same signature") from None

