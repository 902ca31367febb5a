"""Static collection: environment (secrets masked), installed libraries, hyperparameters from files."""
from __future__ import annotations

import os
from importlib import metadata
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

import yaml

from msprobe.schema.errors import MsprobeError

from . import formats
from .masking import KEY_ENV, Masker
from .shell import merge_into, parse_shell, script_exports

SHELL_SUFFIXES = (".sh", ".bash", ".zsh", ".ksh")
YAML_SUFFIXES = (".yaml", ".yml")
MAX_INPUT_BYTES = 16 * 2**20  # a launch script or yaml file larger than this is not a configuration
MAX_DEPTH = 32  # yaml nested deeper than this is stored as text from there on


def collect_env(masker: Masker, environ: Optional[Mapping[str, str]] = None) -> Dict[str, str]:
    """Every variable but the masking key itself, secrets masked, undecodable bytes as ``\\xNN``."""
    environ = os.environ if environ is None else environ
    text = {_text(name): _text(value) for name, value in environ.items() if name != KEY_ENV}
    return masker.tree(dict(sorted(text.items())))


def _text(value: str) -> str:
    """os.environ holds bytes that are not UTF-8 as surrogates, which cannot be written as UTF-8."""
    return value.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def collect_pip() -> Dict[str, str]:
    """name -> version of every installed distribution; the first on sys.path is the one imported."""
    out: Dict[str, str] = {}
    for dist in metadata.distributions():
        name = dist.metadata.get("Name") if dist.metadata else None
        if name and name not in out:
            out[name] = dist.version or ""
    return out


def flatten(value: Any, prefix: str, out: Dict[str, Any], depth: int = 0) -> None:
    """Nested yaml -> {'a.b.c': leaf}; lists of scalars stay lists, as msprobe stores them."""
    if depth > MAX_DEPTH and prefix:
        out[prefix] = str(value)[:1000]
    elif isinstance(value, dict):
        for key, child in value.items():
            flatten(child, f"{prefix}.{key}" if prefix else str(key), out, depth + 1)
    elif isinstance(value, list) and not all(isinstance(x, (int, float, str, bool, list)) for x in value):
        for index, child in enumerate(value):
            flatten(child, f"{prefix}.{index}" if prefix else str(index), out, depth + 1)
    elif prefix:
        out[prefix] = value if isinstance(value, (int, float, str, bool, list)) or value is None else str(value)


def read_hyperparameters(path: Path, text: str) -> Dict[str, Any]:
    """The hyperparameters of the launch script or yaml file ``path``, whose text (read_inputs) is ``text``."""
    suffix = path.suffix.lower()
    if suffix in YAML_SUFFIXES:
        try:
            loaded = yaml.safe_load(text)
        except RecursionError:
            raise MsprobeError(f"{path}: yaml nested too deeply")
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


def _read(path: Path) -> str:
    if not path.is_file():
        raise MsprobeError(f"{path}: no such launch script or yaml file")
    try:
        if path.stat().st_size > MAX_INPUT_BYTES:
            raise MsprobeError(f"{path}: {path.stat().st_size / 2**20:.0f} MiB, larger than a launch script or yaml "
                               f"file can be ({MAX_INPUT_BYTES // 2**20} MiB)")
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise MsprobeError(f"{path}: cannot read ({exc.strerror})")


def read_inputs(paths: Iterable[Path]) -> List[Tuple[Path, str]]:
    """Each launch script or yaml file with its text, read once: the environment and the hyperparameters
    both come from it."""
    return [(Path(path), _read(Path(path))) for path in paths]


def launch_environment(inputs: Iterable[Tuple[Path, str]], environ: Mapping[str, str]) -> Dict[str, str]:
    """``environ`` as the launch scripts among ``inputs`` (path, text) change it for their launch commands
    (what they export, unset or put before the command), in order: the environment the training runs in, not
    the packer's."""
    out = dict(environ)
    for path, text in inputs:
        if path.suffix.lower() not in SHELL_SUFFIXES:
            continue
        for name, value in script_exports(text, out).items():
            if value is None:
                out.pop(name, None)
            else:
                out[name] = value
    return out


def collect_hyperparameters(inputs: Iterable[Tuple[Path, str]]) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for path, text in inputs:
        merge_into(out, read_hyperparameters(path, text))
    return out


def static_entries(paths: Optional[Iterable[Path]], masker: Masker,
                   environ: Optional[Mapping[str, str]] = None) -> Dict[str, bytes]:
    """The entries every pack has (env: with what the given launch scripts export; pip) and the static
    hyperparameters when files are given."""
    inputs = read_inputs(paths or [])
    environ = launch_environment(inputs, os.environ if environ is None else environ)
    entries = {formats.ENV: formats.dumps(collect_env(masker, environ)), formats.PIP: formats.pip_text(collect_pip())}
    if inputs:
        entries[formats.HYPER_STATIC] = formats.dumps(masker.tree(collect_hyperparameters(inputs)))
    return entries
