"""The pack (zip): the one place its layout lives (msprobe's config_check documentation).

A pack is read completely and validated before anything is written, so a bad pack
fails with one line naming the pack and the entry, and touches no file.
"""
from __future__ import annotations

import json
import os
import re
import stat
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from msprobe.schema.errors import MsprobeError

ENV = "env"
PIP = "pip"
HYPER_STATIC = "hyperparameters/hyperparameters_static.json"
HYPER_DYNAMIC = "hyperparameters/hyperparameters_dynamic.json"
STAT_KEYS = ("max", "min", "mean", "norm")
"""A tensor's statistics in weight.json and dataset.json, msprobe config_check's pack format: not
derived from the dump's ``msprobe.schema.dump.STAT_KEYS``, because a statistic the dump adds must not
change the pack, or packs written by msprobe (these four keys) would stop reading as statistics."""

_WEIGHTS = re.compile(r"^weights/step(\d+)/rank(\d+)/weight\.json$")
_DATASET = re.compile(r"^dataset/step(\d+)/rank(\d+)/dataset\.json$")
_RANDOM = re.compile(r"^random/rank(\d+)\.json$")

DEFAULT_PACK = "./config_check_pack.zip"
Track = Callable[[Sequence[Any], str], Iterable[Any]]
"""Wraps a sequence being worked through with a progress bar (msprobe.cli.progress.track)."""


@dataclass(frozen=True)
class PackLimits:
    """What reading one pack may cost: a zip bomb is refused from its directory, before inflating."""

    max_entry_bytes: int = 256 * 2**20
    """Largest entry, inflated (a weight.json of 100,000 parameters is about 20 MiB)."""
    max_total_bytes: int = 4 * 2**30
    """All entries together, inflated (they are held in memory while compared)."""
    max_entries: int = 500_000
    """Entries in one zip (8 ranks x 1000 micro-steps x 2 is 16,000)."""
    max_ratio: float = 300.0
    """Largest inflated/compressed size of an entry above ``ratio_from_bytes`` (JSON packs at 3-20)."""
    ratio_from_bytes: int = 2**20
    """Entries smaller than this are not checked for their ratio."""


def weights_entry(step: int, rank: int) -> str:
    return f"weights/step{step}/rank{rank}/weight.json"


def dataset_entry(step: int, rank: int) -> str:
    return f"dataset/step{step}/rank{rank}/dataset.json"


def random_entry(rank: int) -> str:
    return f"random/rank{rank}.json"


def dumps(value: Any) -> bytes:
    """JSON text; a string holding undecodable bytes (surrogates) is written as JSON escapes."""
    return json.dumps(value, indent=1, ensure_ascii=False, default=str).encode("utf-8", "backslashreplace")


def pip_text(versions: Dict[str, str]) -> bytes:
    return "".join(f"{name}={version}\n" for name, version in sorted(versions.items())).encode("utf-8",
                                                                                               "backslashreplace")


@dataclass
class Pack:
    """Everything one pack holds, parsed."""

    path: Path
    """The zip it was read from."""
    raw: Dict[str, bytes] = field(default_factory=dict)
    """Entry name -> bytes (last copy wins when a zip repeats a name, as unzip does)."""
    env: Optional[Dict[str, str]] = None
    """Environment variables (secret values masked by our packer)."""
    pip: Optional[Dict[str, str]] = None
    """Installed distribution -> version."""
    hyper: Dict[str, Dict[str, Any]] = field(default_factory=dict)
    """'hyperparameters_static.json' / 'hyperparameters_dynamic.json' -> flat {key: value}."""
    weights: Dict[Tuple[int, int], Dict[str, Any]] = field(default_factory=dict)
    """(step, rank) -> {parameter: {max, min, mean, norm}}."""
    dataset: Dict[Tuple[int, int], Dict[str, Any]] = field(default_factory=dict)
    """(step, rank) -> {"args": ..., "kwargs": ...}."""
    random: Dict[int, Dict[str, Any]] = field(default_factory=dict)
    """rank -> {api: [{count, stack, [seeds]}]}."""
    duplicates: int = 0
    """How many entries the zip repeats (msprobe's re-pack appends them)."""


def check_entry_name(pack: Path, name: str) -> None:
    """Refuse names that would land outside the extraction folder."""
    parts = name.replace("\\", "/").split("/")
    if (name.startswith(("/", "\\")) or "\\" in name or re.match(r"^[A-Za-z]:", name)
            or any(part in ("..", ".") for part in parts) or "\x00" in name):
        raise MsprobeError(f"{pack}: entry '{name}' would be written outside the output folder; refusing the pack")


def load_pack(path: Path, limits: PackLimits = PackLimits(), track: Optional[Track] = None) -> Pack:
    """Read and validate a pack; ``track(entries, description)`` wraps the entries read (progress)."""
    path = Path(path)
    if not path.is_file():
        raise MsprobeError(f"{path}: no such pack file")
    if not zipfile.is_zipfile(path):
        raise MsprobeError(f"{path}: not a zip file (expected a config_check pack)")
    pack = Pack(path=path)
    try:
        with zipfile.ZipFile(path) as archive:
            infos = archive.infolist()
            check_sizes(path, infos, limits)
            for info in track(infos, f"reading {path.name}") if track is not None else infos:
                if not info.is_dir():
                    pack.duplicates += info.filename in pack.raw
                    pack.raw[info.filename] = archive.read(info)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, NotImplementedError) as exc:
        raise MsprobeError(f"{path}: corrupt zip ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})")
    _parse(pack)
    return pack


def check_sizes(path: Path, infos: List[zipfile.ZipInfo], limits: PackLimits) -> None:
    """Names, links and sizes from the zip's directory; reading stops at the declared sizes."""
    if len(infos) > limits.max_entries:
        raise MsprobeError(f"{path}: {len(infos)} entries, more than a config_check pack may hold "
                           f"({limits.max_entries}); refusing it")
    total = 0
    for info in infos:
        check_entry_name(path, info.filename)
        if stat.S_ISLNK(info.external_attr >> 16):
            raise MsprobeError(f"{path}: entry '{info.filename}' is a symbolic link; refusing the pack")
        size, packed = info.file_size, max(info.compress_size, 1)
        if size > limits.max_entry_bytes or (size > limits.ratio_from_bytes and size / packed > limits.max_ratio):
            raise MsprobeError(f"{path}: entry '{info.filename}' inflates to {_size(size)} from {_size(packed)} "
                               f"(limits: {_size(limits.max_entry_bytes)}, {limits.max_ratio:.0f}:1); "
                               f"refusing the pack")
        total += size
    if total > limits.max_total_bytes:
        raise MsprobeError(f"{path}: unpacks to {_size(total)}, more than a config_check pack may "
                           f"({_size(limits.max_total_bytes)}); refusing it")


def _size(count: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count} bytes"


def _parse(pack: Pack) -> None:
    known = False
    for name, data in sorted(pack.raw.items()):
        match = None
        if name == ENV:
            pack.env = _str_dict(pack, name, _json(pack, name, data))
        elif name == PIP:
            pack.pip = _pip(pack, name, data)
        elif name in (HYPER_STATIC, HYPER_DYNAMIC):
            pack.hyper[os.path.basename(name)] = _object(pack, name, _json(pack, name, data))
        elif (match := _WEIGHTS.match(name)) is not None:
            pack.weights[(int(match[1]), int(match[2]))] = _object(pack, name, _json(pack, name, data))
        elif (match := _DATASET.match(name)) is not None:
            value = _object(pack, name, _json(pack, name, data))
            pack.dataset[(int(match[1]), int(match[2]))] = value
        elif (match := _RANDOM.match(name)) is not None:
            pack.random[int(match[1])] = _random(pack, name, _json(pack, name, data))
        else:
            continue
        known = True
    if not known:
        raise MsprobeError(f"{pack.path}: entry 'env': missing (not a config_check pack)")
    if pack.env is None:
        raise MsprobeError(f"{pack.path}: entry 'env': missing")
    if pack.pip is None:
        raise MsprobeError(f"{pack.path}: entry 'pip': missing")


def _json(pack: Pack, name: str, data: bytes) -> Any:
    try:
        return json.loads(data.decode("utf-8"))
    except RecursionError:
        raise MsprobeError(f"{pack.path}: entry '{name}': JSON nested too deeply")
    except (UnicodeDecodeError, ValueError) as exc:
        raise MsprobeError(f"{pack.path}: entry '{name}': malformed JSON ({str(exc).splitlines()[0]})")


def _object(pack: Pack, name: str, value: Any) -> Dict[str, Any]:
    if not isinstance(value, dict):
        raise MsprobeError(f"{pack.path}: entry '{name}': expected a JSON object, got {type(value).__name__}")
    return value


def _str_dict(pack: Pack, name: str, value: Any) -> Dict[str, str]:
    value = _object(pack, name, value)
    return {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in value.items()}


def _pip(pack: Pack, name: str, data: bytes) -> Dict[str, str]:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise MsprobeError(f"{pack.path}: entry '{name}': not UTF-8 text")
    out: Dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line:
            continue
        if "=" not in line:
            raise MsprobeError(f"{pack.path}: entry '{name}' line {number}: expected 'name=version', got {line[:40]!r}")
        library, _, version = line.partition("=")
        out[library.strip()] = version.strip()
    return out


def _random(pack: Pack, name: str, value: Any) -> Dict[str, Any]:
    value = _object(pack, name, value)
    for api, entries in value.items():
        ok = isinstance(entries, list) and all(
            isinstance(e, dict) and isinstance(e.get("count"), int) and isinstance(e.get("stack"), list)
            for e in entries)
        if not ok:
            raise MsprobeError(f"{pack.path}: entry '{name}' field '{api}': expected a list of {{count, stack}}")
    return value


def write_zip(path: Path, entries: Dict[str, bytes]) -> None:
    """Write a fresh zip atomically: a re-pack replaces the old one, never appends to it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(handle)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; a pack is a normal user file
    try:
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
            for name in sorted(entries):
                archive.writestr(name, entries[name])
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
