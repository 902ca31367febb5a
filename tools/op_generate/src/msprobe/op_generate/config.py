"""config_op.json: which API of which dump to reproduce, and how (FORMATS.md §8, seed doc 33)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Optional

from msprobe.schema import SchemaError, try_parse_entry
from msprobe.schema.jsonio import load_json

from .apis import API_NAME_RE

PROPAGATIONS = ("forward", "backward")
DATA_MODES = ("random_data", "real_data")
MAX_CONFIG_BYTES = 1 << 20
MAX_ITER_TIMES = 1000


@dataclass(frozen=True)
class OpConfig:
    """One reproduction request, as read from config_op.json (paths as given, relative to the working directory)."""

    api_name: str
    """The API without its direction: ``{Prefix}.{api}.{call}``, e.g. ``Functional.softmax.3``."""
    dump_json_path: Optional[Path] = None
    """The dump.json holding the API; None when ``extract_api_path`` already holds it."""
    extract_api_path: Optional[Path] = None
    """Where the API's forward and backward entries are written (tensor file paths made absolute), or read
    from when there is no ``dump_json_path``."""
    propagation: str = "forward"
    """``forward``, or ``backward`` (the script then runs both and judges both)."""
    data_mode: str = "random_data"
    """``random_data``: tensors drawn in the dumped [Min, Max]; ``real_data``: the dumped tensor files."""
    random_seed: int = 1234
    """Seed of the random inputs (iteration ``i`` draws with ``random_seed + i``)."""
    iter_times: int = 1
    """How many times the API runs (1..1000); above 1 the spread and any nondeterminism are reported."""
    cosine_threshold: float = 0.99
    """A row passes only when its cosine similarity is above this (the documented rule)."""
    max_abs_error_threshold: float = 0.0001
    """A row passes only when its largest absolute error is below this (the seed doc; msprobe's code used 0.001)."""


_FIELDS = ("dump_json_path", "api_name", "extract_api_path", "propagation", "data_mode", "random_seed",
           "iter_times", "cosine_threshold", "max_abs_error_threshold")


def load_op_config(path: Path) -> OpConfig:
    """Read and check config_op.json; every bad value is a SchemaError naming the file and field."""
    path = Path(path)
    if path.is_file() and path.stat().st_size > MAX_CONFIG_BYTES:
        raise SchemaError(path, None, f"larger than {MAX_CONFIG_BYTES} bytes; a config_op.json is a few lines")
    doc = load_json(path)
    if not isinstance(doc, dict):
        raise SchemaError(path, None, "expected a JSON object", type(doc).__name__, has_got=True)
    return parse_op_config(doc, path)


def parse_op_config(doc: Dict[str, Any], path: Optional[Path] = None) -> OpConfig:
    unknown = sorted(set(doc) - set(_FIELDS))
    if unknown:
        raise SchemaError(path, unknown[0], f"unknown field; expected one of {', '.join(_FIELDS)}")
    api_name = _string(doc, "api_name", path, required=True)
    parsed = try_parse_entry(f"{api_name}.forward")
    if parsed is None or parsed.kind != "api" or not API_NAME_RE.fullmatch(api_name):  # (it names a file)
        raise SchemaError(path, "api_name", "expected '{Prefix}.{api}.{call}' such as 'Functional.softmax.3'",
                          api_name, has_got=True)
    dump_json = _string(doc, "dump_json_path", path)
    extract = _string(doc, "extract_api_path", path)
    if dump_json is None and extract is None:
        raise SchemaError(path, "dump_json_path", "missing: give dump_json_path, or an extract_api_path that "
                          "holds the extracted API")
    return OpConfig(
        api_name=api_name,
        dump_json_path=Path(dump_json) if dump_json else None,
        extract_api_path=Path(extract) if extract else None,
        propagation=_choice(doc, "propagation", PROPAGATIONS, path),
        data_mode=_choice(doc, "data_mode", DATA_MODES, path),
        random_seed=_integer(doc, "random_seed", 1234, 0, 2 ** 32 - 1, path),
        iter_times=_integer(doc, "iter_times", 1, 1, MAX_ITER_TIMES, path),
        cosine_threshold=_number(doc, "cosine_threshold", 0.99, -1.0, 1.0, path),
        max_abs_error_threshold=_number(doc, "max_abs_error_threshold", 0.0001, 0.0, float("inf"), path),
    )


def _string(doc: Dict[str, Any], key: str, path: Optional[Path], required: bool = False) -> Optional[str]:
    value = doc.get(key)
    if value is None or value == "":
        if required:
            raise SchemaError(path, key, "missing or empty")
        return None
    if not isinstance(value, str):
        raise SchemaError(path, key, "expected a string", value, has_got=True)
    if "\x00" in value or len(value) > 4096:
        raise SchemaError(path, key, "expected a path or name of at most 4096 characters", value, has_got=True)
    return value


def _choice(doc: Dict[str, Any], key: str, choices: tuple, path: Optional[Path]) -> str:
    value = doc.get(key, choices[0])
    if value not in choices:
        raise SchemaError(path, key, f"expected one of {', '.join(choices)}", value, has_got=True)
    return value


def _integer(doc: Dict[str, Any], key: str, default: int, low: int, high: int, path: Optional[Path]) -> int:
    value = doc.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise SchemaError(path, key, "expected an integer", value, has_got=True)
    if not low <= value <= high:
        raise SchemaError(path, key, f"expected {low}..{high}", value, has_got=True)
    return value


def _number(doc: Dict[str, Any], key: str, default: float, low: float, high: float, path: Optional[Path]) -> float:
    value = doc.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        raise SchemaError(path, key, f"expected a number in [{low}, {high}]", value, has_got=True)
    return float(value)
