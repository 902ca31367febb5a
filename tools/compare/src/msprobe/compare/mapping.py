"""API names across torch, MSAdapter/MindTorch and MindSpore: the key two entries are paired by.

An API entry's key is ``(api, direction)`` with the prefix dropped and the name lower-cased
(``Mint.matmul``, ``Torch.matmul`` and ``Functional.matmul`` all give ``matmul``), after the mapping
has renamed it: the shipped ``default_mapping.yaml`` (MindSpore ``ops`` / ``mint`` names whose torch
function is spelled differently) plus the user's file. A mapping file is either ours,
``{"api": {"Mint.nn.functional.relu": "Functional.relu", ...}, "module": {"MsClass": {"ms_attr": "pt_attr"}}}``,
msprobe's api mapping (``{ms_api: pt_api}``, e.g. ``Functional.abs: Torch.abs``), or msprobe's
layer_mapping (``{Class: {ms_attr: pt_attr}}``); the three are told apart by their shape.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

import yaml

from msprobe.schema import MsprobeError, try_parse_entry

DEFAULT_MAPPING = Path(__file__).with_name("default_mapping.yaml")
MAX_MAPPING_BYTES = 4 << 20


@dataclass
class NameMapping:
    """API renames (full name or bare api name → torch spelling) and module attribute renames."""

    api: Dict[str, str] = field(default_factory=dict)
    module: Dict[str, str] = field(default_factory=dict)
    """MindSpore attribute name → torch attribute name, whatever the class (msprobe keys them by class)."""

    def update(self, other: "NameMapping") -> None:
        self.api.update(other.api)
        self.module.update(other.module)

    def api_key(self, entry_name: str) -> Optional[Tuple[str, str]]:
        """(canonical api, direction) of an API entry; None for modules and unparsable names."""
        parsed = try_parse_entry(entry_name)
        if parsed is None or parsed.kind != "api":
            return None
        full = f"{parsed.prefix}.{parsed.name}"
        renamed = self.api.get(full) or self.api.get(parsed.name) or parsed.name
        return renamed.rsplit(".", 1)[-1].lower(), parsed.direction

    def module_path(self, path: str) -> str:
        """A module path with MindSpore attribute names replaced by their torch names."""
        if not self.module:
            return path
        return ".".join(self.module.get(part, part) for part in path.split("."))


def load_mapping(path: Optional[Path]) -> NameMapping:
    """The shipped defaults, plus ``path`` when given (its entries win)."""
    mapping = _parse(_read(DEFAULT_MAPPING), DEFAULT_MAPPING)
    if path is not None:
        mapping.update(_parse(_read(Path(path)), Path(path)))
    return mapping


def _read(path: Path) -> Any:
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise MsprobeError(f"{path}: cannot read the mapping file ({exc.strerror})") from None
    if size > MAX_MAPPING_BYTES:
        raise MsprobeError(f"{path}: mapping file of {size} bytes, over the {MAX_MAPPING_BYTES}-byte limit")
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise MsprobeError(f"{path}: not a YAML mapping file ({str(exc).splitlines()[0]})") from None


def _parse(doc: Any, path: Path) -> NameMapping:
    if not isinstance(doc, dict):
        raise MsprobeError(f"{path}: expected a mapping of names, got {type(doc).__name__}")
    if set(doc) <= {"api", "module"} and doc:
        api, module = doc.get("api") or {}, doc.get("module") or {}
        return NameMapping(api=_strings(api, path, "api"), module=_flatten_layers(module, path))
    if all(isinstance(v, dict) for v in doc.values()):
        return NameMapping(module=_flatten_layers(doc, path))
    return NameMapping(api=_strings(doc, path, None))


def _strings(doc: Any, path: Path, where: Optional[str]) -> Dict[str, str]:
    if not isinstance(doc, dict):
        raise MsprobeError(f"{path}: field '{where}' must map names to names")
    out = {}
    for key, value in doc.items():
        if not isinstance(key, str) or not isinstance(value, str):
            field_name = f"{where}.{key}" if where else str(key)
            raise MsprobeError(f"{path}: field '{field_name}' must map a name to a name, got {value!r}")
        out[key] = value
    return out


def _flatten_layers(doc: Any, path: Path) -> Dict[str, str]:
    if not isinstance(doc, dict):
        raise MsprobeError(f"{path}: field 'module' must map class names to {{ms_name: pt_name}}")
    out: Dict[str, str] = {}
    for cls, renames in doc.items():
        for key, value in _strings(renames, path, str(cls)).items():
            # a dotted msprobe key names a path inside the class; its last part is the attribute
            out[key.rsplit(".", 1)[-1]] = value.rsplit(".", 1)[-1]
    return out
