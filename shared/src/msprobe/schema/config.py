"""config.json of PrecisionDebugger: every field of msprobe's file, validated with the field's name.

Constructor arguments (``task``, ``dump_path``, ``level``, ``step``) replace the file's values before
anything is validated, so a file value they replace may be empty or wrong. Sections of
upstream tools that this suite does not provide (``run_ut``, ``grad_probe``...) are accepted and
reported as unused; any other unknown key is an error that names it.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Dict, List, Literal, Optional, Tuple

from .errors import PathLike, SchemaError
from .flight_recorder import KEYS as RECORDER_KEYS, FlightRecorderConfig, parse_recorder, recorder_to_json
from .jsonio import load_json
from .kinds import LEVELS, TASKS, Level
from .ranges import IntRanges
from .values import boolean, choice, int_list, optional_int, optional_string, str_list, string, unknown

DATA_MODES = ("all", "forward", "backward", "input", "output")
SummaryMode = Literal["statistics", "md5", "xor"]
SUMMARY_MODES: Tuple[str, ...] = ("statistics", "md5", "xor")
FILE_FORMATS = ("npy", "bin")
PRECISIONS = ("low", "high")
RISK_LEVELS = ("CORE", "FOCUS", "ALL")
UPSTREAM_ONLY_SECTIONS = ("run_ut", "acc_check", "grad_probe", "free_benchmark", "structure", "exception_dump")
UPSTREAM_ONLY_KEYS = ("acl_config", "extra_info", "online_run_ut", "nfs_path", "host", "port", "tls_path",
                      "backward_input", "tensor_list", "check_mode", "online_run_ut_recompute")
OVERRIDABLE = ("task", "dump_path", "level", "step")
"""Fields a ``PrecisionDebugger(...)`` argument replaces."""
ARGUMENTS_SOURCE = "PrecisionDebugger() arguments"
"""How errors name a value that came from a constructor argument rather than the file."""


@dataclass(frozen=True)
class TaskConfig:
    """The block keyed by the task name (``"statistics": {...}``, ``"tensor": {...}``)."""

    scope: Tuple[str, ...] = ()
    """Two entry names = record from the first to the second; otherwise the names to record."""
    list: Tuple[str, ...] = ()
    """Substrings: record only entries whose name contains one of them."""
    data_mode: Tuple[str, ...] = ("all",)
    """``all`` or a subset of forward, backward, input, output."""
    summary_mode: SummaryMode = "statistics"
    """``statistics`` (Max/Min/Mean/Norm), ``md5`` (adds the CRC-32 of the raw bytes) or ``xor`` (msprobe
    26.x: a 64-bit XOR checksum of the raw bytes, ``"0x"`` and 16 hex digits, in the ``md5`` field)."""
    file_format: str = "npy"
    """MindSpore tensor files: ``npy`` or ``bin``."""
    overflow_nums: int = 1
    """overflow_check: stop recording after this many overflows; -1 = unlimited."""
    check_mode: str = "all"
    """overflow_check (upstream MindSpore): ``all``, ``aicore`` or ``atomic``; kept for compatibility."""
    save_tensors: bool = False
    """overflow_check: also write the real tensors of the kept entries (costs what a tensor dump costs)."""
    ignore: Tuple[str, ...] = ()
    """overflow_check: APIs whose inf/nan outputs are expected, ``API`` or ``API:inf|-inf|nan`` (``Torch.log:-inf``);
    their form is checked by the overflow tool, which applies them (msprobe.overflow.rules.parse_ignore)."""
    recorder: Optional[FlightRecorderConfig] = None
    """flight_recorder: its own options (``schema/flight_recorder.py``); None for every other task."""


@dataclass(frozen=True)
class DebuggerConfig:
    """The whole configuration of a PrecisionDebugger."""

    task: str = "statistics"
    """statistics | tensor | overflow_check."""
    dump_path: str = "./dump_path"
    """Root of the dump tree."""
    rank: IntRanges = IntRanges()
    """Ranks to record, kept as ranges (``r in config.rank``); empty = all."""
    step: IntRanges = IntRanges()
    """Steps to record, kept as ranges (``s in config.step``); empty = all."""
    level: Level = "L1"
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
    risk_level: str = "FOCUS"
    """msprobe 26.x's filter of the API list at L1 and mix: ``FOCUS`` (msprobe's default) leaves out its
    low-risk APIs (reshapes, views, dtype conversions, factories: ``to``, ``reshape``, ``cat``...), ``CORE``
    keeps matmuls, convolutions, norms, embeddings and collectives, ``ALL`` (or null) the whole list. No
    filter when the task block has a ``scope`` or ``list``, as in msprobe. PyTorch only."""
    record_all_apis: bool = False
    """Record every API torch declares overridable (PyTorch, L1 and mix): msprobe's list plus indexing
    (``Tensor.__getitem__``), ``view``, ``contiguous``..., and none left out by ``risk_level``; the default
    is msprobe's set, so that two tools' dumps of one run pair entry for entry."""
    task_config: TaskConfig = field(default_factory=TaskConfig)
    """The block of the selected task."""
    source: Optional[str] = None
    """File the configuration came from (None = package default)."""
    unused: Tuple[str, ...] = ()
    """Upstream keys and sections accepted but unused by this suite (reported, not silently dropped)."""

    @property
    def summary_mode(self) -> SummaryMode:
        return self.task_config.summary_mode

    def wants_step(self, step: int) -> bool:
        return not self.step or step in self.step

    def wants_rank(self, rank: Optional[int]) -> bool:
        return not self.rank or rank is None or rank in self.rank

    def overriding(self, **overrides: Any) -> "DebuggerConfig":
        """A copy with non-None constructor arguments applied and validated like file fields.

        Prefer ``load_config(path, **overrides)``: it applies them before the file is validated (a file
        value an argument replaces may then be empty) and selects the task block of the given task."""
        given = _given(overrides)
        checked = {key: _CHECKS[key](value, ARGUMENTS_SOURCE, key) for key, value in given.items()}
        return replace(self, **checked)


TOP_KEYS = {f.name for f in fields(DebuggerConfig)} - {"task_config", "source", "unused"}
TASK_KEYS = {f.name for f in fields(TaskConfig)} - {"recorder"}


def default_config() -> DebuggerConfig:
    return DebuggerConfig()


def load_config(path: Optional[PathLike], **overrides: Any) -> DebuggerConfig:
    """Read and validate a config.json; ``None`` gives the package default. ``overrides``: the
    ``PrecisionDebugger`` arguments (``task``, ``dump_path``, ``level``, ``step``; None = not given),
    which replace the file's values before validation."""
    if path is None:
        return parse_config({}, "PrecisionDebugger()", overrides) if _given(overrides) else default_config()
    return parse_config(load_json(path), str(path), overrides)


def _given(overrides: Dict[str, Any]) -> Dict[str, Any]:
    strange = set(overrides) - set(OVERRIDABLE)
    if strange:
        raise TypeError(f"unexpected override(s): {', '.join(sorted(strange))}")
    return {key: value for key, value in overrides.items() if value is not None}


def parse_config(doc: Any, source: str = "config.json", overrides: Optional[Dict[str, Any]] = None) -> DebuggerConfig:
    """Validate a parsed config.json; ``overrides`` as in :func:`load_config`."""
    if not isinstance(doc, dict):
        raise SchemaError(source, None, "expected a JSON object", type(doc).__name__, has_got=True)
    unused: List[str] = []
    for key in doc:
        if key in TOP_KEYS or key in TASKS:
            continue
        if key in UPSTREAM_ONLY_SECTIONS or key in UPSTREAM_ONLY_KEYS:
            unused.append(key)
            continue
        unknown(source, key, sorted(TOP_KEYS | set(TASKS)))
    given = _given(overrides or {})

    def top(key: str, default: Any) -> Any:
        if key in given:
            return _CHECKS[key](given[key], ARGUMENTS_SOURCE, key)
        return _CHECKS[key](doc.get(key, default), source, key)

    task = top("task", "statistics")
    values: Dict[str, Any] = {
        "task": task,
        "dump_path": top("dump_path", "./dump_path"),
        "rank": int_list(doc.get("rank", []), source, "rank"),
        "step": top("step", []),
        "level": top("level", "L1"),
        "seed": optional_int(doc.get("seed"), source, "seed"),
        "is_deterministic": boolean(doc.get("is_deterministic", False), source, "is_deterministic"),
        "enable_dataloader": boolean(doc.get("enable_dataloader", False), source, "enable_dataloader"),
        "async_dump": boolean(doc.get("async_dump", False), source, "async_dump"),
        "precision": choice(doc.get("precision", "low"), PRECISIONS, source, "precision"),
        "api_list": optional_string(doc.get("api_list"), source, "api_list"),
        "record_nested": boolean(doc.get("record_nested", False), source, "record_nested"),
        "risk_level": _risk_level(doc.get("risk_level", "FOCUS"), source),
        "record_all_apis": boolean(doc.get("record_all_apis", False), source, "record_all_apis"),
    }
    for name in TASKS:
        if name in doc and name != task:
            _parse_task(doc[name], source, name, [])  # validated even when not selected
    task_config = _parse_task(doc.get(task, {}), source, task, unused)
    return DebuggerConfig(task_config=task_config, source=source, unused=tuple(unused), **values)


def _risk_level(value: Any, source: str) -> str:
    """msprobe reads an empty or null risk_level as ``ALL``."""
    return "ALL" if value is None or value == "" else choice(value, RISK_LEVELS, source, "risk_level")


def _parse_task(block: Any, source: str, name: str, unused: List[str]) -> TaskConfig:
    if not isinstance(block, dict):
        raise SchemaError(source, name, "expected an object", block, has_got=True)
    recorder_keys = set(RECORDER_KEYS) if name == "flight_recorder" else set()
    for key in block:
        if key in TASK_KEYS or key in recorder_keys:
            continue
        if key in UPSTREAM_ONLY_KEYS:
            unused.append(f"{name}.{key}")
            continue
        unknown(source, f"{name}.{key}", sorted(TASK_KEYS | recorder_keys), key)
    data_mode = str_list(block.get("data_mode", ["all"]), source, f"{name}.data_mode")
    for mode in data_mode:
        choice(mode, DATA_MODES, source, f"{name}.data_mode")
    if not data_mode:
        raise SchemaError(source, f"{name}.data_mode", f"expected a non-empty subset of {list(DATA_MODES)}")
    overflow = block.get("overflow_nums", 1)
    overflow = optional_int(overflow, source, f"{name}.overflow_nums")
    if overflow is None or overflow == 0 or overflow < -1:
        raise SchemaError(source, f"{name}.overflow_nums", "expected a positive integer or -1 (unlimited)",
                          block.get("overflow_nums"), has_got=True)
    return TaskConfig(
        scope=tuple(str_list(block.get("scope", []), source, f"{name}.scope")),
        list=tuple(str_list(block.get("list", []), source, f"{name}.list")),
        data_mode=tuple(data_mode),
        summary_mode=choice(block.get("summary_mode", "statistics"), SUMMARY_MODES, source, f"{name}.summary_mode"),
        file_format=choice(block.get("file_format", "npy"), FILE_FORMATS, source, f"{name}.file_format"),
        overflow_nums=overflow,
        check_mode=string(block.get("check_mode", "all"), source, f"{name}.check_mode"),
        save_tensors=boolean(block.get("save_tensors", False), source, f"{name}.save_tensors"),
        ignore=tuple(str_list(block.get("ignore", []), source, f"{name}.ignore")),
        recorder=parse_recorder(block, source, name) if recorder_keys else None,
    )


_CHECKS = {
    "task": lambda value, source, name: choice(value, TASKS, source, name),
    "dump_path": string,
    "level": lambda value, source, name: choice(value, LEVELS, source, name),
    "step": int_list,
}
"""Validation of the fields a constructor argument may replace."""


def config_to_json(config: DebuggerConfig) -> Dict[str, Any]:
    """The configuration as a config.json document (what ``load_config`` reads back)."""
    tc = config.task_config
    block: Dict[str, Any] = {"scope": list(tc.scope), "list": list(tc.list), "data_mode": list(tc.data_mode)}
    if config.task == "statistics" or tc.summary_mode != "statistics":
        block["summary_mode"] = tc.summary_mode
    if config.task == "tensor":
        block["file_format"] = tc.file_format
    if config.task == "overflow_check":
        block["overflow_nums"] = tc.overflow_nums
        if tc.save_tensors:
            block["save_tensors"] = True
    if tc.ignore:
        block["ignore"] = list(tc.ignore)
    if tc.recorder is not None:
        block.update(recorder_to_json(tc.recorder))
    doc = {"task": config.task, "dump_path": config.dump_path, "rank": config.rank.to_json(),
           "step": config.step.to_json(), "level": config.level, "async_dump": config.async_dump,
           "precision": config.precision, config.task: block}
    for key in ("seed", "api_list"):
        if getattr(config, key) is not None:
            doc[key] = getattr(config, key)
    if config.is_deterministic:
        doc["is_deterministic"] = True
    if config.record_nested:
        doc["record_nested"] = True
    if config.risk_level != "FOCUS":
        doc["risk_level"] = config.risk_level
    if config.record_all_apis:
        doc["record_all_apis"] = True
    return doc


def resolve_path(config: DebuggerConfig, value: str) -> Path:
    """Paths inside a config file are relative to the current directory, as in msprobe."""
    return Path(value).expanduser()
