"""Generate ``src/msprobe/pytorch/support_wrap_ops_all.yaml`` (``record_all_apis``) from the installed torch.

Run: ``python tools/dump/scripts/gen_support_wrap_ops.py [--check]``. The list holds every function
torch declares overridable (``torch.overrides.get_overridable_functions``) in ``torch``,
``torch.Tensor`` and ``torch.nn.functional``, minus introspection and bookkeeping methods that are
not computations, plus torch.distributed's collectives (patched, they are not overridable).
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import torch
import torch.distributed as dist
from torch.overrides import get_overridable_functions

OUT = Path(__file__).resolve().parents[1] / "src" / "msprobe" / "pytorch" / "support_wrap_ops_all.yaml"
# Not computations: introspection, conversions to Python, autograd bookkeeping, storage handling.
SKIP_EXACT = {
    "size", "dim", "ndimension", "numel", "nelement", "stride", "storage_offset", "data_ptr", "element_size",
    "get_device", "item", "tolist", "numpy", "backward", "register_hook", "register_post_accumulate_grad_hook",
    "retain_grad", "requires_grad_", "detach_", "share_memory_", "pin_memory", "untyped_storage", "storage",
    "storage_type", "_typed_storage", "type", "dim_order", "has_names", "refine_names", "rename", "rename_",
    "align_to", "unflatten", "record_stream", "module_load", "as_subclass", "apply_", "map_", "map2_",
    "nonzero_static", "__repr__", "__format__", "__len__", "__iter__", "__hash__", "__reduce_ex__",
    "__setstate__", "__deepcopy__", "__array__", "__array_wrap__", "__contains__", "__dir__", "__reversed__",
    "__index__", "__int__", "__float__", "__complex__", "__bool__", "__nonzero__", "__long__", "__dlpack__",
    "__dlpack_device__", "__torch_function__", "__torch_dispatch__", "__get__", "__set__", "__delete__",
    "is_contiguous", "is_floating_point", "is_complex", "is_signed", "is_set_to", "is_shared", "is_pinned",
    "is_nonzero", "is_same_size", "is_inference", "is_coalesced", "is_conj", "is_neg", "dense_dim",
    "sparse_dim", "to_sparse", "values", "indices", "crow_indices", "col_indices", "ccol_indices", "row_indices",
    "q_scale", "q_zero_point", "q_per_channel_scales", "q_per_channel_zero_points", "q_per_channel_axis",
    "qscheme", "int_repr", "dequantize", "set_", "resize_", "resize_as_", "sym_size", "sym_stride", "sym_numel",
    "sym_storage_offset", "get_default_dtype", "set_default_dtype", "is_tensor", "is_storage", "numel",
    "is_grad_enabled", "is_autocast_enabled", "result_type", "can_cast", "promote_types", "manual_seed",
}
SKIP_RE = re.compile(r"^(_(?!_)|is_|has_|__(?:get|set)state|__reduce)")
DISTRIBUTED = ("send", "recv", "isend", "irecv", "broadcast", "all_reduce", "reduce", "all_gather", "gather",
               "scatter", "reduce_scatter", "all_gather_into_tensor", "reduce_scatter_tensor", "all_to_all",
               "all_to_all_single", "batch_isend_irecv", "barrier", "broadcast_object_list", "all_gather_object",
               "_all_gather_base", "_reduce_scatter_base")
HEADER = """# Every overridable torch API, by category: what "record_all_apis": true records (levels L1 and mix);
# the default is msprobe 26.2.0's list, support_wrap_ops.yaml.
# Generated from torch {version} by tools/dump/scripts/gen_support_wrap_ops.py; do not edit here:
# copy this file, edit the copy and set "api_list": "<path of the copy>" in config.json.
"""


def names_of(functions, namespace) -> list:
    out = set()
    for func in functions:
        name = getattr(func, "__name__", None)
        if not name or name in SKIP_EXACT or SKIP_RE.match(name):
            continue
        if getattr(namespace, name, None) is None:
            continue
        out.add(name)
    # Python's operators torch binds to a method of another name (Tensor.__neg__ is Tensor.neg): listed under
    # their own names too, as they are recorded so (pytorch/operators.py)
    ids = {id(func) for func in functions}
    for name in dir(namespace):
        if name.startswith("__") and name.endswith("__") and name not in SKIP_EXACT and not SKIP_RE.match(name) \
                and id(getattr(namespace, name, None)) in ids:
            out.add(name)
    return sorted(out)


def generate() -> str:
    found = get_overridable_functions()
    sections = {
        "functional": names_of(found.get(torch.nn.functional, []), torch.nn.functional),
        "tensor": names_of(found.get(torch.Tensor, []), torch.Tensor),
        "torch": names_of(found.get(torch, []), torch),
        "distributed": sorted(n for n in DISTRIBUTED if hasattr(dist, n)),
    }
    lines = [HEADER.format(version=torch.__version__.split("+")[0])]
    for section, names in sections.items():
        lines.append(f"{section}:")
        lines.extend(f"  - {name}" for name in names)
        lines.append("")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the committed file is out of date")
    parser.add_argument("-o", "--output", type=Path, default=OUT)
    args = parser.parse_args(argv)
    text = generate()
    if args.check:
        same = args.output.exists() and args.output.read_text(encoding="utf-8") == text
        print("up to date" if same else f"{args.output} is out of date: rerun {Path(__file__).name}")
        return 0 if same else 1
    args.output.write_text(text, encoding="utf-8")
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
