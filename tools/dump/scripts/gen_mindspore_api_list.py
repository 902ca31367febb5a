"""Generate the shipped API lists of the MindSpore adapter from the installed frameworks themselves.

    python tools/dump/scripts/gen_mindspore_api_list.py mindspore [--check]
    python3.9 tools/dump/scripts/gen_mindspore_api_list.py msadapter [--check]

writes ``src/msprobe/mindspore/support_wrap_ops.yaml`` (native) or ``support_wrap_ops_mindtorch.yaml``;
``--check`` only compares and exits 1 when the shipped file differs from what this installation gives.

``mindspore``: public compute functions of ``mindspore.ops``, ``mindspore.mint``, ``mindspore.mint.nn.functional``,
the communication functions and the public methods of ``mindspore.Tensor``. ``msadapter`` (or ``mindtorch``):
``torch.*``, ``torch.nn.functional.*``, ``torch.Tensor`` methods and ``torch.distributed``. Helpers that compute
nothing (dtype/shape queries, host copies, graph-building utilities, in-place data setters) are left out by the
rules below, so the list stays wrappable: wrapping one of them would break type checks or record noise.
"""
from __future__ import annotations

import importlib
import inspect
import re
import sys
from pathlib import Path
from typing import Dict, Iterable, List

# never wrapped: host copies, metadata, autodiff/graph machinery, setters that change identity
DENY = {
    "asnumpy", "numpy", "item", "tolist", "dim", "ndimension", "size", "numel", "nelement", "element_size",
    "data_ptr", "storage", "untyped_storage", "init_data", "data_sync", "assign_value", "assign_value_cpp",
    "register_hook", "set_dtype", "set_cast_dtype", "set_const_arg", "set_init_flag", "flush_from_cache",
    "stub_sync", "dtype", "shape", "rank", "typeof", "is_tensor", "is_floating_point", "is_complex", "is_signed",
    "is_contiguous", "is_persistent_data", "is_init", "has_init", "offload", "offload_file_path", "move_to",
    "to", "cpu", "cuda", "npu", "type", "type_as", "requires_grad_", "retain_grad", "backward", "detach_",
    "grad", "value_and_grad", "jvp", "vjp", "vmap", "jacfwd", "jacrev", "derivative", "stop_gradient",
    "constexpr", "primitive", "prim_attr_register", "custom_info_register", "kernel", "ms_class", "jit", "depend",
    "print_", "tensor_dot", "hook", "hookbackward", "hook_backward", "manual_seed", "seed", "initial_seed",
    "get_rng_state", "set_rng_state", "set_default_dtype", "get_default_dtype", "set_default_tensor_type",
    "is_grad_enabled", "set_grad_enabled", "no_grad", "enable_grad", "load", "save", "from_numpy", "as_tensor",
    "tensor", "get_default_device", "Size", "is_storage", "device", "finfo", "iinfo", "clone_", "bfloat16",
    "get_world_size", "get_rank", "init_process_group", "destroy_process_group", "is_initialized", "new_group",
    "barrier", "is_available", "get_backend", "get_local_rank", "get_group_size", "init", "release",
    # MSAdapter / MindTorch plumbing exported next to the torch API (wrapping them recurses through casts)
    "create_tensor", "register_msadapter_tensor", "unsupported_attr", "are_deterministic_algorithms_enabled",
    "use_deterministic_algorithms", "typename", "can_cast", "broadcast_shapes", "result_type",
}
DENY_RE = re.compile(r"^(_|is_|set_|get_|has_|cast_to_|inner_)|_grad$|_op$|^(pin_memory|share_memory_|new_.*)$")
COMPUTE_MODULE_RE = re.compile(r"^(mindspore\.ops\.(function|auto_generate|functional|composite\.math_ops|"
                               r"operations\._)|mindspore\.mint|mindspore\.communication|msadapter|mindtorch)")


def public_functions(namespace, check_module: bool) -> List[str]:
    names = getattr(namespace, "__all__", None) or dir(namespace)
    out = []
    for name in names:
        obj = getattr(namespace, name, None)
        if obj is None or name in DENY or DENY_RE.search(name) or not inspect.isroutine(obj):
            continue  # classes, modules and callable objects (Primitive instances) are not APIs to wrap
        module = getattr(obj, "__module__", "") or ""
        if check_module and not COMPUTE_MODULE_RE.match(module):
            continue
        out.append(name)
    return sorted(set(out))


# operators recorded under their dunder name (``Tensor.__add__.0.forward``, as upstream does);
# __bool__/__int__/__index__... are host conversions, not computations, and stay out
TENSOR_DUNDERS = ("__abs__", "__add__", "__and__", "__eq__", "__floordiv__", "__ge__", "__getitem__", "__gt__",
                  "__iadd__", "__imul__", "__isub__", "__itruediv__", "__invert__", "__le__", "__lt__",
                  "__matmul__", "__mod__", "__mul__", "__ne__", "__neg__", "__or__", "__pow__", "__radd__",
                  "__rmatmul__", "__rmod__", "__rmul__", "__rpow__", "__rsub__", "__rtruediv__", "__setitem__",
                  "__sub__", "__truediv__", "__xor__")


def tensor_methods(cls) -> List[str]:
    out = [name for name in TENSOR_DUNDERS if callable(getattr(cls, name, None))]
    for name in dir(cls):
        if name in DENY or DENY_RE.search(name):
            continue
        try:
            raw = inspect.getattr_static(cls, name)
        except AttributeError:
            continue
        if isinstance(raw, (property, staticmethod, classmethod)) or not callable(getattr(cls, name, None)):
            continue
        out.append(name)
    return sorted(set(out))


def mindspore_lists() -> Dict[str, List[str]]:
    import mindspore as ms
    lists = {
        "ops": public_functions(importlib.import_module("mindspore.ops"), True),
        "tensor": tensor_methods(ms.Tensor),
    }
    for key, module in (("mint.ops", "mindspore.mint"), ("mint.nn.functional", "mindspore.mint.nn.functional"),
                        ("communication.comm_func", "mindspore.communication.comm_func"),
                        ("mint.distributed", "mindspore.mint.distributed")):
        try:
            lists[key] = public_functions(importlib.import_module(module), False)
        except ImportError:
            continue
    return lists


def torch_lists(package: str) -> Dict[str, List[str]]:
    torch = importlib.import_module(package)
    lists = {
        "torch": public_functions(torch, True),
        "functional": public_functions(importlib.import_module(package + ".nn.functional"), True),
        "tensor": tensor_methods(torch.Tensor),
    }
    try:
        lists["distributed"] = public_functions(importlib.import_module(package + ".distributed"), True)
    except ImportError:
        pass
    return lists


def dump_yaml(lists: Dict[str, List[str]], header: Iterable[str]) -> str:
    lines = [f"# {line}" for line in header]
    for key, names in lists.items():
        lines.append(f"{key}:")
        lines.extend(f"  - {name}" for name in names)
    return "\n".join(lines) + "\n"


SHIPPED = Path(__file__).resolve().parents[1] / "src" / "msprobe" / "mindspore"


def main(argv: List[str]) -> int:
    check = "--check" in argv
    argv = [a for a in argv if a != "--check"]
    kind = argv[1] if len(argv) > 1 else "mindspore"
    if kind == "mindspore":
        import mindspore
        lists, source = mindspore_lists(), f"mindspore {mindspore.__version__}"
    else:
        package = {"msadapter": "msadapter.pytorch", "mindtorch": "mindtorch.torch"}[kind]
        import mindspore
        lists, source = torch_lists(package), f"{package} on mindspore {mindspore.__version__}"
    text = dump_yaml(lists, [f"Generated by tools/dump/scripts/gen_mindspore_api_list.py from {source}.",
                             "Copy this file, edit it, and give its path as \"api_list\" in config.json."])
    target = SHIPPED / ("support_wrap_ops.yaml" if kind == "mindspore" else "support_wrap_ops_mindtorch.yaml")
    if check:
        same = target.is_file() and target.read_text(encoding="utf-8") == text
        print(f"{target.name}: {'up to date' if same else 'differs from ' + source + ': regenerate it'}")
        return 0 if same else 1
    target.write_text(text, encoding="utf-8")
    print(f"wrote {target} ({sum(len(v) for v in lists.values())} APIs from {source})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
