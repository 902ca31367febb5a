"""Reading a support_wrap_ops.yaml (category → API names): one reader for every adapter's list."""
from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Sequence

import yaml

from msprobe.schema import SchemaError


def read_api_list(source: Path, known: Sequence[str], ignored: Sequence[str] = (),
                  flavour: str = "") -> Dict[str, List[str]]:
    """Categories in ``known`` with their names; ``ignored`` categories (APIs of absent packages) are dropped;
    anything else is a SchemaError naming the file and the category."""
    try:
        doc = yaml.safe_load(source.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SchemaError(source, None, f"cannot read the API list: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise SchemaError(source, None, f"invalid YAML: {str(exc).splitlines()[0]}") from None
    if not isinstance(doc, dict):
        raise SchemaError(source, None, f"expected categories ({', '.join(known)}) of API names")
    out: Dict[str, List[str]] = {}
    for category, names in doc.items():
        if category not in known and category not in ignored:
            where = f" for {flavour}" if flavour else ""
            raise SchemaError(source, str(category), f"unknown category{where}; expected one of {', '.join(known)}")
        names = [] if names is None else names
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise SchemaError(source, str(category), "expected a list of API names", names, has_got=True)
        if category in known:
            out[category] = names
    return out
