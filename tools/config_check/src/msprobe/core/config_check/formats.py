"""The pack (zip) and the report (result.xlsx): the one place their layout lives (FORMATS.md §6).

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
from typing import Any, Dict, Optional, Tuple

from msprobe.schema.errors import MsprobeError

ENV = "env"
PIP = "pip"
HYPER_STATIC = "hyperparameters/hyperparameters_static.json"
HYPER_DYNAMIC = "hyperparameters/hyperparameters_dynamic.json"
STAT_KEYS = ("max", "min", "mean", "norm")

_WEIGHTS = re.compile(r"^weights/step(\d+)/rank(\d+)/weight\.json$")
_DATASET = re.compile(r"^dataset/step(\d+)/rank(\d+)/dataset\.json$")
_RANDOM = re.compile(r"^random/rank(\d+)\.json$")

PASS, WARNING, ERROR, INFO = "pass", "warning", "error", "info"
ITEMS = ("env", "pip", "dataset", "weights", "hyperparameters", "random")
SUMMARY_COLUMNS = ("filename", "pass_check", "detail")
RESULT_FILE = "result.xlsx"
OUT_MARKER = ".msprobe-config-check"
DEFAULT_PACK = "./config_check_pack.zip"
DEFAULT_RESULT = "./config_check_result"
MAX_PACK_BYTES = 4 * 2**30  # a zip bomb is refused before anything is unpacked
_DIFFS = ("max_relative_diff", "min_relative_diff", "mean_relative_diff", "norm_relative_diff")
COLUMNS = {
    "env": ("bench_env_name", "cmp_env_name", "bench_value", "cmp_value", "level", "why"),
    "pip": ("package", "bench version", "cmp version", "level", "why"),
    "dataset": ("step", "rank", "tag", "equal") + _DIFFS + ("level",),
    "weights": ("step", "rank", "weight_name", "equal") + _DIFFS + ("level",),
    "hyperparameters": ("file_name", "bench_para", "cmp_para", "bench_value", "cmp_value", "matched_with", "level"),
    "random": ("op", "rank", "call_site", "bench_count", "cmp_count", "bench_seeds", "cmp_seeds", "level",
               "bench_stack", "cmp_stack"),
}
"""Sheet -> header. Relative differences are (cmp - bench) / |bench|: positive means cmp is larger."""


def weights_entry(step: int, rank: int) -> str:
    return f"weights/step{step}/rank{rank}/weight.json"


def dataset_entry(step: int, rank: int) -> str:
    return f"dataset/step{step}/rank{rank}/dataset.json"


def random_entry(rank: int) -> str:
    return f"random/rank{rank}.json"


def dumps(value: Any) -> bytes:
    return json.dumps(value, indent=1, ensure_ascii=False, default=str).encode("utf-8")


def pip_text(versions: Dict[str, str]) -> bytes:
    return "".join(f"{name}={version}\n" for name, version in sorted(versions.items())).encode("utf-8")


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


def load_pack(path: Path) -> Pack:
    path = Path(path)
    if not path.is_file():
        raise MsprobeError(f"{path}: no such pack file")
    if not zipfile.is_zipfile(path):
        raise MsprobeError(f"{path}: not a zip file (expected a config_check pack)")
    pack = Pack(path=path)
    try:
        with zipfile.ZipFile(path) as archive:
            total = sum(info.file_size for info in archive.infolist())
            if total > MAX_PACK_BYTES:
                raise MsprobeError(f"{path}: unpacks to {total / 2**30:.1f} GiB, more than a config_check pack "
                                   f"can hold ({MAX_PACK_BYTES / 2**30:.0f} GiB); refusing it")
            for info in archive.infolist():
                check_entry_name(path, info.filename)
                if stat.S_ISLNK(info.external_attr >> 16):
                    raise MsprobeError(f"{path}: entry '{info.filename}' is a symbolic link; refusing the pack")
                if info.is_dir():
                    continue
                pack.duplicates += info.filename in pack.raw
                pack.raw[info.filename] = archive.read(info)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, NotImplementedError) as exc:
        raise MsprobeError(f"{path}: corrupt zip ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})")
    _parse(pack)
    return pack


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


@dataclass
class ItemResult:
    """One compared item: a summary row and a sheet."""

    name: str
    """Sheet name, one of ITEMS."""
    rows: list = field(default_factory=list)
    """Tuples in the order of COLUMNS[name]; the 'level' column grades each row."""
    note: str = ""
    """Why the item could not be compared fully (e.g. not collected in one pack)."""
    note_level: str = PASS
    """Level the note alone implies."""
    counted: str = ""
    """Row counts for the summary when the sheet shows fewer rows than were compared."""

    @property
    def level(self) -> str:
        position = COLUMNS[self.name].index("level")
        levels = {row[position] for row in self.rows} | {self.note_level}
        return ERROR if ERROR in levels else WARNING if WARNING in levels else PASS

    @property
    def detail(self) -> str:
        position = COLUMNS[self.name].index("level")
        counts: Dict[str, int] = {}
        for row in self.rows:
            counts[row[position]] = counts.get(row[position], 0) + 1
        parts = [f"{counts[level]} {level}" for level in (ERROR, WARNING, INFO, PASS) if counts.get(level)]
        if self.counted:
            parts = [self.counted]
        if self.note:
            parts.insert(0, self.note)
        return ", ".join(parts) if parts else "identical"
