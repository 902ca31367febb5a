"""The known API table: which names torch's namespaces hold, so that an API name taken from a dump is checked
against it with or without torch in the generating environment (a name not in the table never reaches a script).

``api_table.json`` beside this file is generated from torch (``python -m msprobe.op_generate.api_table``): the
computations torch declares overridable (``torch.overrides.get_overridable_functions``) in ``torch``,
``torch.nn.functional`` and ``torch.Tensor`` (operators such as ``__add__``, ``__iadd__``, ``__getitem__``
included), the set msprobe's dump wraps; file and process functions (``torch.save``, ``torch.load``,
``manual_seed``...) are not computations and are not in it.
"""
from __future__ import annotations

import json
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any, Dict, FrozenSet, List

TABLE_FILE = Path(__file__).with_name("api_table.json")
NAMESPACES = ("torch", "torch.nn.functional", "Tensor")
"""Keys of the table: the bench modules (``BENCH_MODULES``) and the Tensor methods."""


@lru_cache(maxsize=1)  # (the file is part of the package: read once per process)
def api_table() -> Dict[str, FrozenSet[str]]:
    doc = json.loads(TABLE_FILE.read_text(encoding="utf-8"))
    return {space: frozenset(doc[space]) for space in NAMESPACES}


def known(namespace: str, name: str) -> bool:
    """True when ``namespace`` (``torch``, ``torch.nn.functional`` or ``Tensor``) holds ``name``."""
    return name in api_table().get(namespace, frozenset())


def build(torch: Any) -> Dict[str, Any]:
    """The table of an installed torch."""
    import torch.nn.functional as functional  # (only when generating the table)
    from torch.overrides import get_overridable_functions

    overridable = get_overridable_functions()
    return {"torch_version": torch.__version__.split("+")[0], "torch": _names(torch, overridable),
            "torch.nn.functional": _names(functional, overridable), "Tensor": _names(torch.Tensor, overridable)}


def _names(owner: Any, overridable: Dict[Any, List[Any]]) -> List[str]:
    ids = {id(function) for function in overridable.get(owner, ())}
    return sorted(name for name in dir(owner) if name.isidentifier() and (not name.startswith("_") or
                  name.startswith("__") and name.endswith("__")) and id(getattr(owner, name, None)) in ids)


def main() -> int:
    import torch

    TABLE_FILE.write_text(json.dumps(build(torch), indent=0) + "\n", encoding="utf-8")
    print(f"wrote {TABLE_FILE}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
