"""config.json of PrecisionDebugger: every field of msprobe's file, validated with the field's name.

Constructor arguments (``task``, ``dump_path``, ``level``, ``step``) override the file. Sections of
upstream tools that this suite does not provide (``run_ut``, ``grad_probe``...) are accepted and
reported as unused; any other unknown key is an error that names it.
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .errors import PathLike, SchemaError
from .jsonio import load_json

TASKS = ("statistics", "tensor", "overflow_check")
LEVELS = ("L0", "L1", "mix")
DATA_MODES = ("all", "forward", "backward", "input", "output")
SUMMARY_MODES = ("statistics", "md5")
FILE_FORMATS = ("npy", "bin")
PRECISIONS = ("low", "high")
UPSTREAM_ONLY_SECTIONS = ("run_ut", "acc_check", "grad_probe", "free_benchmark", "structure", "exception_dump")
UPSTREAM_ONLY_KEYS = ("acl_config", "extra_info", "online_run_ut", "nfs_path", "host", "port", "tls_path",
                      "backward_input", "tensor_list", "check_mode", "online_run_ut_recompute")


@dataclass(frozen=True)
class TaskConfig:
    """The block keyed by the task name (``"statistics": {...}``, ``"tensor": {...}``)."""

    scope: Tuple[str, ...] = ()
    """Two entry names = record from the first to the second; otherwise the names to record."""
    list: Tuple[str, ...] = ()
    """Substrings: record only entries whose name contains one of them."""
    data_mode: Tuple[str, ...] = ("all",)
    """``all`` or a subset of forward, backward, input, output."""
    summary_mode: str = "statistics"
    """``statistics`` (Max/Min/Mean/Norm) or ``md5`` (adds the CRC-32 of the raw bytes)."""
    file_format: str = "npy"
    """MindSpore tensor files: ``npy`` or ``bin``."""
    overflow_nums: int = 1
    """overflow_check: stop recording after this many overflows; -1 = unlimited."""
    check_mode: str = "all"
    """overflow_check (upstream MindSpore): ``all``, ``aicore`` or ``atomic``; kept for compatibility."""
    save_tensors: bool = False
    """overflow_check: also write the real tensors of the kept entries (costs what a tensor dump costs)."""


@dataclass(frozen=True)
class DebuggerConfig:
    """The whole configuration of a PrecisionDebugger."""

    task: str = "statistics"
    """statistics | tensor | overflow_check."""
    dump_path: str = "./dump_path"
    """Root of the dump tree."""
    rank: Tuple[int, ...] = ()
    """Ranks to record; empty = all."""
    step: Tuple[int, ...] = ()
    """Steps to record; empty = all."""
    level: str = "L1"
    """L0 (modules), L1 (APIs) or mix (both)."""
    seed: Optional[int] = None
    """Seed for seed_all when the file asks for one."""
    is_deterministic: bool = False
    """Turn on deterministic algorithms with the seed."""
    enable_dataloader: bool = False
    """Upstream's automatic step counting from the dataloader (deprecated there too)."""
    async_dump: bool = False
    """Defer statistics to the end of the step (no host sync at all during the step)."""
    precision: str = "low"
    """low: statistics in float32; high: float64."""
    api_list: Optional[str] = None
    """Path of the user's own support_wrap_ops.yaml; replaces the shipped API list."""
    record_nested: bool = False
    """Also record APIs called inside other recorded APIs (msprobe records only the outermost)."""
    task_config: TaskConfig = field(default_factory=TaskConfig)
    """The block of the selected task."""
    source: Optional[str] = None
    """File the configuration came from (None = package default)."""
    unused: Tuple[str, ...] = ()
    """Upstream keys and sections accepted but unused by this suite (reported, not silently dropped)."""

    @property
    def summary_mode(self) -> str:
        return self.task_config.summary_mode

    def wants_step(self, step: int) -> bool:
        return not self.step or step in self.step

    def wants_rank(self, rank: Optional[int]) -> bool:
        return not self.rank or rank is None or rank in self.rank

    def overriding(self, **overrides: Any) -> "DebuggerConfig":
        """A copy with non-None constructor arguments applied and validated like file fields."""
        doc = {k: v for k, v in overrides.items() if v is not None}
        source = self.source or "PrecisionDebugger()"
        checked = {}
        if "task" in doc:
            checked["task"] = _choice(doc["task"], TASKS, source, "task")
        if "level" in doc:
            checked["level"] = _choice(doc["level"], LEVELS, source, "level")
        if "dump_path" in doc:
            checked["dump_path"] = _string(doc["dump_path"], source, "dump_path")
        if "step" in doc:
            checked["step"] = _int_list(doc["step"], source, "step")
        return replace(self, **checked)


TOP_KEYS = {f.name for f in fields(DebuggerConfig)} - {"task_config", "source", "unused"}
TASK_KEYS = {f.name for f in fields(TaskConfig)}


def default_config() -> DebuggerConfig:
    return DebuggerConfig()


def load_config(path: Optional[PathLike]) -> DebuggerConfig:
    """Read and validate a config.json; ``None`` gives the package default."""
    if path is None:
        return default_config()
    return parse_config(load_json(path), str(path))


def parse_config(doc: Any, source: str = "config.json") -> DebuggerConfig:
    if not isinstance(doc, dict):
        raise SchemaError(source, None, "expected a JSON object", type(doc).__name__, has_got=True)
    unused: List[str] = []
    for key in doc:
        if key in TOP_KEYS or key in TASKS:
            continue
        if key in UPSTREAM_ONLY_SECTIONS or key in UPSTREAM_ONLY_KEYS:
            unused.append(key)
            continue
        _unknown(source, key, sorted(TOP_KEYS | set(TASKS)))
    task = _choice(doc.get("task", "statistics"), TASKS, source, "task")
    values: Dict[str, Any] = {
        "task": task,
        "dump_path": _string(doc.get("dump_path", "./dump_path"), source, "dump_path"),
        "rank": _int_list(doc.get("rank", []), source, "rank"),
        "step": _int_list(doc.get("step", []), source, "step"),
        "level": _choice(doc.get("level", "L1"), LEVELS, source, "level"),
        "seed": _optional_int(doc.get("seed"), source, "seed"),
        "is_deterministic": _bool(doc.get("is_deterministic", False), source, "is_deterministic"),
        "enable_dataloader": _bool(doc.get("enable_dataloader", False), source, "enable_dataloader"),
        "async_dump": _bool(doc.get("async_dump", False), source, "async_dump"),
        "precision": _choice(doc.get("precision", "low"), PRECISIONS, source, "precision"),
        "api_list": _optional_string(doc.get("api_list"), source, "api_list"),
        "record_nested": _bool(doc.get("record_nested", False), source, "record_nested"),
    }
    for name in TASKS:
        if name in doc and name != task:
            _parse_task(doc[name], source, name, [])  # validated even when not selected
    task_config = _parse_task(doc.get(task, {}), source, task, unused)
    return DebuggerConfig(task_config=task_config, source=source, unused=tuple(unused), **values)


def _parse_task(block: Any, source: str, name: str, unused: List[str]) -> TaskConfig:
    if not isinstance(block, dict):
        raise SchemaError(source, name, "expected an object", block, has_got=True)
    for key in block:
        if key in TASK_KEYS:
            continue
        if key in UPSTREAM_ONLY_KEYS:
            unused.append(f"{name}.{key}")
            continue
        _unknown(source, f"{name}.{key}", sorted(TASK_KEYS), key)
    data_mode = _str_list(block.get("data_mode", ["all"]), source, f"{name}.data_mode")
    for mode in data_mode:
        _choice(mode, DATA_MODES, source, f"{name}.data_mode")
    if not data_mode:
        raise SchemaError(source, f"{name}.data_mode", f"expected a non-empty subset of {list(DATA_MODES)}")
    overflow = block.get("overflow_nums", 1)
    overflow = _optional_int(overflow, source, f"{name}.overflow_nums")
    if overflow is None or overflow == 0 or overflow < -1:
        raise SchemaError(source, f"{name}.overflow_nums", "expected a positive integer or -1 (unlimited)",
                          block.get("overflow_nums"), has_got=True)
    return TaskConfig(
        scope=tuple(_str_list(block.get("scope", []), source, f"{name}.scope")),
        list=tuple(_str_list(block.get("list", []), source, f"{name}.list")),
        data_mode=tuple(data_mode),
        summary_mode=_choice(block.get("summary_mode", "statistics"), SUMMARY_MODES, source, f"{name}.summary_mode"),
        file_format=_choice(block.get("file_format", "npy"), FILE_FORMATS, source, f"{name}.file_format"),
        overflow_nums=overflow,
        check_mode=_string(block.get("check_mode", "all"), source, f"{name}.check_mode"),
        save_tensors=_bool(block.get("save_tensors", False), source, f"{name}.save_tensors"),
    )


def _unknown(source: str, where: str, known: Sequence[str], key: Optional[str] = None) -> None:
    close = difflib.get_close_matches(key or where, known, n=1)
    hint = f" (did you mean '{close[0]}'?)" if close else f"; known keys: {', '.join(known)}"
    raise SchemaError(source, where, "unknown key" + hint)


def _choice(value: Any, choices: Sequence[str], source: str, name: str) -> str:
    if value not in choices:
        raise SchemaError(source, name, f"expected one of {', '.join(choices)}", value, has_got=True)
    return value


def _string(value: Any, source: str, name: str) -> str:
    if not isinstance(value, str) or not value:
        raise SchemaError(source, name, "expected a non-empty string", value, has_got=True)
    return value


def _optional_string(value: Any, source: str, name: str) -> Optional[str]:
    return None if value is None else _string(value, source, name)


def _bool(value: Any, source: str, name: str) -> bool:
    if not isinstance(value, bool):
        raise SchemaError(source, name, "expected true or false", value, has_got=True)
    return value


def _optional_int(value: Any, source: str, name: str) -> Optional[int]:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise SchemaError(source, name, "expected an integer", value, has_got=True)
    return value


def _str_list(value: Any, source: str, name: str) -> List[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise SchemaError(source, name, "expected a list of strings", value, has_got=True)
    return value


_RANGE_RE = re.compile(r"^\s*(\d+)\s*-\s*(\d+)\s*$")


def _int_list(value: Any, source: str, name: str) -> Tuple[int, ...]:
    """A list of non-negative ints and ``"a-b"`` ranges, e.g. ``[0, "2-4"]`` → (0, 2, 3, 4)."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, list):
        raise SchemaError(source, name, 'expected a list of integers or "a-b" ranges', value, has_got=True)
    out: List[int] = []
    for item in value:
        if isinstance(item, int) and not isinstance(item, bool) and item >= 0:
            out.append(item)
            continue
        match = _RANGE_RE.match(item) if isinstance(item, str) else None
        if match and int(match.group(1)) <= int(match.group(2)):
            out.extend(range(int(match.group(1)), int(match.group(2)) + 1))
            continue
        raise SchemaError(source, name, 'expected non-negative integers or "a-b" ranges with a <= b', item,
                          has_got=True)
    return tuple(sorted(set(out)))


def config_to_json(config: DebuggerConfig) -> Dict[str, Any]:
    """The configuration as a config.json document (what ``load_config`` reads back)."""
    tc = config.task_config
    block: Dict[str, Any] = {"scope": list(tc.scope), "list": list(tc.list), "data_mode": list(tc.data_mode)}
    if config.task == "statistics":
        block["summary_mode"] = tc.summary_mode
    if config.task == "tensor":
        block["file_format"] = tc.file_format
    if config.task == "overflow_check":
        block["overflow_nums"] = tc.overflow_nums
        if tc.save_tensors:
            block["save_tensors"] = True
    doc = {"task": config.task, "dump_path": config.dump_path, "rank": list(config.rank),
           "step": list(config.step), "level": config.level, "async_dump": config.async_dump,
           "precision": config.precision, config.task: block}
    for key in ("seed", "api_list"):
        if getattr(config, key) is not None:
            doc[key] = getattr(config, key)
    if config.is_deterministic:
        doc["is_deterministic"] = True
    if config.record_nested:
        doc["record_nested"] = True
    return doc


def resolve_path(config: DebuggerConfig, value: str) -> Path:
    """Paths inside a config file are relative to the current directory, as in msprobe."""
    return Path(value).expanduser()
