"""Static collection: environment (secrets masked), installed libraries, hyperparameters from files."""
from __future__ import annotations

import hashlib
import os
from importlib import metadata
from pathlib import Path
from typing import Any, Dict, Iterable, Mapping, Optional

import yaml

from msprobe.schema.errors import MsprobeError

from . import formats
from .catalog import is_secret
from .shell import merge_into, parse_shell

SHELL_SUFFIXES = (".sh", ".bash", ".zsh", ".ksh")
YAML_SUFFIXES = (".yaml", ".yml")


def mask(name: str, value: str) -> str:
    """A stable fingerprint: equal secrets give equal text, so a difference is still reported."""
    digest = hashlib.sha256(f"{name}\0{value}".encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return f"<masked sha256:{digest}>"


def collect_env(environ: Optional[Mapping[str, str]] = None) -> Dict[str, str]:
    environ = os.environ if environ is None else environ
    return {name: mask(name, value) if is_secret(name) else value for name, value in sorted(environ.items())}


def collect_pip() -> Dict[str, str]:
    """name -> version of every installed distribution; the first on sys.path is the one imported."""
    out: Dict[str, str] = {}
    for dist in metadata.distributions():
        name = dist.metadata.get("Name") if dist.metadata else None
        if name and name not in out:
            out[name] = dist.version or ""
    return out


def flatten(value: Any, prefix: str, out: Dict[str, Any]) -> None:
    """Nested yaml -> {'a.b.c': leaf}; lists of scalars stay lists, as msprobe stores them."""
    if isinstance(value, dict):
        for key, child in value.items():
            flatten(child, f"{prefix}.{key}" if prefix else str(key), out)
    elif isinstance(value, list) and not all(isinstance(x, (int, float, str, bool, list)) for x in value):
        for index, child in enumerate(value):
            flatten(child, f"{prefix}.{index}" if prefix else str(index), out)
    elif prefix:
        out[prefix] = value if isinstance(value, (int, float, str, bool, list)) or value is None else str(value)


def read_hyperparameters(path: Path) -> Dict[str, Any]:
    path = Path(path)
    if not path.is_file():
        raise MsprobeError(f"{path}: no such launch script or yaml file")
    suffix = path.suffix.lower()
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise MsprobeError(f"{path}: cannot read ({exc.strerror})")
    if suffix in YAML_SUFFIXES:
        try:
            loaded = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" line {mark.line + 1}" if mark is not None else ""
            raise MsprobeError(f"{path}{where}: malformed yaml ({getattr(exc, 'problem', None) or exc})")
        out: Dict[str, Any] = {}
        flatten(loaded, "", out)
        return out
    if suffix in SHELL_SUFFIXES:
        return parse_shell(text)
    raise MsprobeError(f"{path}: expected a launch script (.sh) or a yaml file (.yaml/.yml)")


def collect_hyperparameters(paths: Iterable[Path]) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for path in paths:
        merge_into(out, read_hyperparameters(Path(path)))
    return out


def static_entries(paths: Optional[Iterable[Path]], environ: Optional[Mapping[str, str]] = None) -> Dict[str, bytes]:
    """The entries every pack has (env, pip) and the static hyperparameters when files are given."""
    entries = {formats.ENV: formats.dumps(collect_env(environ)), formats.PIP: formats.pip_text(collect_pip())}
    paths = list(paths or [])
    if paths:
        entries[formats.HYPER_STATIC] = formats.dumps(collect_hyperparameters(paths))
    return entries
