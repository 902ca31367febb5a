"""Entry names (keys of dump.json ``data``) and tensor file names: built and parsed in one place.

API entry      ``{Prefix}.{api}.{call}.{forward|backward}``           e.g. ``Functional.linear.5.backward``
Module entry   ``{Module|Cell}.{path}.{Class}.{forward|backward}.{call}`` e.g. ``Module.conv1.Conv2d.forward.0``
Parameter grad ``{Module|Cell}.{path}.{Class}.parameters_grad[.{call}]``
Saved variable ``{name}.{call}.{forward|backward}`` with prefix ``Debug`` (``PrecisionDebugger.save``)
Tensor file    ``{entry}.{input|output|<kwarg>|parameters}.{position...}.{pt|npy}``
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional, Tuple

from .errors import SchemaError

DIRECTIONS = ("forward", "backward")
MODULE_PREFIXES = ("Module", "Cell")
PYTORCH_API_PREFIXES = ("Tensor", "Torch", "Functional", "NPU", "Distributed", "Aten", "VF", "Jit")
MINDSPORE_API_PREFIXES = ("Tensor", "Functional", "Mint", "MintFunctional", "Primitive", "Distributed", "Jit")
MINDTORCH_API_PREFIXES = PYTORCH_API_PREFIXES + ("Primitive",)
SAVE_PREFIX = "Debug"
PARAMS_GRAD = "parameters_grad"
TENSOR_FILE_SUFFIXES = (".pt", ".npy", ".bin")

_API_RE = re.compile(r"^(?P<prefix>[A-Za-z_][\w]*)\.(?P<api>.+)\.(?P<call>\d+)\.(?P<dir>forward|backward)\Z")
_MODULE_RE = re.compile(
    r"^(?P<prefix>Module|Cell)\.(?P<path>.+)\.(?P<cls>[^.]+)\.(?P<dir>forward|backward)\.(?P<call>\d+)\Z")
_GRAD_RE = re.compile(r"^(?P<prefix>Module|Cell)\.(?P<path>.+)\.(?P<cls>[^.]+)\.parameters_grad(?:\.(?P<call>\d+))?\Z")


@dataclass(frozen=True)
class EntryName:
    """A parsed dump.json key. ``kind`` is ``api``, ``module`` or ``parameters_grad``."""

    kind: str
    prefix: str
    name: str
    """API name (``linear``) or module path (``layers.0.mlp``)."""
    direction: Optional[str]
    call: Optional[int]
    class_name: Optional[str] = None

    def __str__(self) -> str:
        if self.kind == "module":
            return module_entry(self.prefix, self.name, self.class_name, self.direction, self.call)
        if self.kind == PARAMS_GRAD:
            return params_grad_entry(self.prefix, self.name, self.class_name, self.call)
        return api_entry(self.prefix, self.name, self.call, self.direction)

    @property
    def is_module(self) -> bool:
        return self.kind in ("module", PARAMS_GRAD)


def api_entry(prefix: str, api: str, call: int, direction: str) -> str:
    return f"{prefix}.{api}.{call}.{direction}"


def module_entry(prefix: str, path: str, class_name: str, direction: str, call: int) -> str:
    return f"{prefix}.{path}.{class_name}.{direction}.{call}"


def params_grad_entry(prefix: str, path: str, class_name: str, call: Optional[int] = None) -> str:
    base = f"{prefix}.{path}.{class_name}.{PARAMS_GRAD}"
    return base if call is None else f"{base}.{call}"


def parse_entry(entry: str) -> EntryName:
    """Parse a dump.json key; raises SchemaError for a key that follows none of the documented shapes."""
    match = _GRAD_RE.match(entry)
    if match:
        call = match.group("call")
        return EntryName(PARAMS_GRAD, match.group("prefix"), match.group("path"), None,
                         int(call) if call is not None else None, match.group("cls"))
    match = _MODULE_RE.match(entry)
    if match:
        return EntryName("module", match.group("prefix"), match.group("path"), match.group("dir"),
                         int(match.group("call")), match.group("cls"))
    match = _API_RE.match(entry)
    if match:
        return EntryName("api", match.group("prefix"), match.group("api"), match.group("dir"), int(match.group("call")))
    raise SchemaError(None, "entry name", "expected '{Prefix}.{api}.{call}.{forward|backward}', "
                      "'{Module}.{path}.{Class}.{forward|backward}.{call}' or '...parameters_grad'",
                      entry, has_got=True)


_KINDS = {"grad": (PARAMS_GRAD, None), "module_forward": ("module", "forward"),
          "module_backward": ("module", "backward"), "api_forward": ("api", "forward"),
          "api_backward": ("api", "backward")}
_KIND_RE = re.compile(
    r"(?P<grad>(?:Module|Cell)\..+\.[^.]+\.parameters_grad(?:\.\d+)?\Z)"
    r"|(?P<module_forward>(?:Module|Cell)\..+\.[^.]+\.forward\.\d+\Z)"
    r"|(?P<module_backward>(?:Module|Cell)\..+\.[^.]+\.backward\.\d+\Z)"
    r"|(?P<api_forward>[A-Za-z_]\w*\..+\.\d+\.forward\Z)|(?P<api_backward>[A-Za-z_]\w*\..+\.\d+\.backward\Z)")
_OTHER = ("other", None)


def entry_kind(entry: str) -> Tuple[str, Optional[str]]:
    """(kind, direction) of :func:`parse_entry`, ``("other", None)`` for a key it refuses: one match, for callers
    that classify every entry of a rank (ten times faster than parsing)."""
    match = _KIND_RE.match(entry)
    return _OTHER if match is None else _KINDS[match.lastgroup]


def try_parse_entry(entry: str) -> Optional[EntryName]:
    try:
        return parse_entry(entry)
    except SchemaError:
        return None


@dataclass(frozen=True)
class TensorFileName:
    """A parsed tensor file name: which entry, which role (input/output/kwarg/parameters), which position."""

    entry: str
    role: str
    position: Tuple[str, ...]
    suffix: str

    def __str__(self) -> str:
        return tensor_file(self.entry, self.role, self.position, self.suffix)


def tensor_file(entry: str, role: str, position: Tuple = (), suffix: str = ".pt") -> str:
    """``tensor_file("Functional.linear.5.backward", "output", (0,), ".npy")`` → ``...backward.output.0.npy``."""
    parts = [entry, role] + [str(p) for p in position]
    return ".".join(parts) + suffix


_ENTRY_END_RES = (
    re.compile(r"^(?:Module|Cell)\..+?\.parameters_grad(?:\.\d+)?(?=\.)"),
    re.compile(r"^(?:Module|Cell)\..+?\.(?:forward|backward)\.\d+(?=\.)"),
    re.compile(r"^[A-Za-z_]\w*\..+?\.\d+\.(?:forward|backward)(?=\.)"),
)


def parse_tensor_file(file_name: str) -> TensorFileName:
    """Split a tensor file name into entry, role and position; SchemaError when it is not one."""
    suffix = next((s for s in TENSOR_FILE_SUFFIXES if file_name.endswith(s)), None)
    if suffix is None:
        raise SchemaError(None, "tensor file name", f"expected a name ending in one of {TENSOR_FILE_SUFFIXES}",
                          file_name, has_got=True)
    stem = file_name[: -len(suffix)]
    for pattern in _ENTRY_END_RES:
        match = pattern.match(stem)
        if match and try_parse_entry(match.group(0)) is not None:
            rest = stem[match.end() + 1:].split(".")
            if not rest or not rest[0]:
                break
            return TensorFileName(match.group(0), rest[0], tuple(rest[1:]), suffix)
    raise SchemaError(None, "tensor file name", "expected '{entry}.{input|output|parameters|<kwarg>}.{position}'",
                      file_name, has_got=True)
