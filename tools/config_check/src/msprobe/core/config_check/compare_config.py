"""Comparison of environment variables, libraries and hyperparameters."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from .catalog import (CROSS_DEVICE_ENV, KEY_LIBRARIES, NUMERIC_ENV, VOLATILE_ENV, canonical_hyper,
                      canonical_library, is_precision, same_value)
from .masking import BOTH_SET, DIFFERENT, KEY_ENV, SAME, compare_masked
from .results import ERROR, INFO, PASS, WARNING, ItemResult

UNSET = "(unset)"


def _is_npu(env: Dict[str, str]) -> bool:
    return any("ASCEND" in name for name in env)


def _norm(value: Optional[str], default: Optional[str]) -> Optional[str]:
    if value is None or value.strip() == "":
        value = default
    if value is None:
        return None
    value = value.strip()
    return value.lower() if value.lower() in ("true", "false") else value


def compare_env(bench: Dict[str, str], cmp: Dict[str, str]) -> ItemResult:
    """Listed variables that differ are errors; any other difference is information."""
    rows: List[Tuple[Any, ...]] = []
    handled = set()
    b_npu, c_npu = _is_npu(bench), _is_npu(cmp)
    if b_npu != c_npu:  # NPU against GPU: compare the variables with the same role
        for npu, gpu in CROSS_DEVICE_ENV:
            b_name, c_name = (npu if b_npu else gpu), (npu if c_npu else gpu)
            handled.update((b_name, c_name))
            b_value, c_value = bench.get(b_name), cmp.get(c_name)
            if _norm(b_value, NUMERIC_ENV[b_name][1]) != _norm(c_value, NUMERIC_ENV[c_name][1]):
                rows.append((b_name, c_name, _show(b_value), _show(c_value), ERROR, NUMERIC_ENV[b_name][0]))
    for name in sorted((set(bench) | set(cmp)) - handled):
        b_value, c_value = bench.get(name), cmp.get(name)
        if name in NUMERIC_ENV:
            why, default = NUMERIC_ENV[name]
            if _norm(b_value, default) != _norm(c_value, default):
                rows.append((name, name, _show(b_value), _show(c_value), ERROR, why))
        elif b_value != c_value:
            secret = compare_masked(b_value, c_value)
            if secret == SAME:
                continue
            why = _SECRET_WHY.get(secret) or ("set by the launcher or shell" if name in VOLATILE_ENV
                                              else "not known to change numerics")
            rows.append((name, name, _show(b_value), _show(c_value), INFO, why))
    rows.sort(key=lambda row: (row[4] != ERROR, row[0]))
    return ItemResult("env", rows)


_SECRET_WHY = {
    DIFFERENT: f"different secret (both packs masked with the same {KEY_ENV})",
    BOTH_SET: f"secret set on both sides; pack both with the same {KEY_ENV} to tell whether it differs",
}


def _show(value: Optional[str]) -> str:
    return UNSET if value is None else value


def compare_pip(bench: Dict[str, str], cmp: Dict[str, str]) -> ItemResult:
    """Key libraries that differ are errors, other libraries warnings."""
    b = {canonical_library(name): (name, version) for name, version in bench.items()}
    c = {canonical_library(name): (name, version) for name, version in cmp.items()}
    rows = []
    for key in sorted(set(b) | set(c)):
        b_version = b[key][1] if key in b else None
        c_version = c[key][1] if key in c else None
        if b_version == c_version:
            continue
        name = (b.get(key) or c.get(key))[0]
        key_library = key in KEY_LIBRARIES
        rows.append((name, b_version or "None", c_version or "None", ERROR if key_library else WARNING,
                     "key library for numerics" if key_library else "other library"))
    rows.sort(key=lambda row: (row[3] != ERROR, row[0].lower()))
    return ItemResult("pip", rows)


def compare_hyper(bench: Dict[str, Dict[str, Any]], cmp: Dict[str, Dict[str, Any]]) -> ItemResult:
    rows: List[Tuple[Any, ...]] = []
    note, note_level = "", PASS
    for file_name in sorted(set(bench) | set(cmp)):
        if file_name not in cmp or file_name not in bench:
            side = "bench" if file_name in bench else "cmp"
            note, note_level = f"{file_name} only in the {side} pack", WARNING
            rows.append((file_name, "", "", "", "", f"only in the {side} pack", WARNING))
            continue
        rows.extend(_compare_params(file_name, bench[file_name], cmp[file_name]))
    return ItemResult("hyperparameters", rows, note=note, note_level=note_level)


def _compare_params(file_name: str, bench: Dict[str, Any], cmp: Dict[str, Any]) -> List[Tuple[Any, ...]]:
    """Exact names first, then '-'/'_' and case, then aliases of the last name part (unique only)."""
    pairs: List[Tuple[str, str, str]] = []
    left, right = dict(bench), dict(cmp)
    for how, key_of in (("name", lambda k: k), ("normalized name", lambda k: k.replace("-", "_").lower()),
                        ("alias", lambda k: canonical_hyper(k.split(".")[-1]))):
        b_keys, c_keys = _unique(left, key_of), _unique(right, key_of)
        for key in sorted(set(b_keys) & set(c_keys)):
            pairs.append((b_keys[key], c_keys[key], how if how != "alias" else f"alias:{key}"))
            left.pop(b_keys[key])
            right.pop(c_keys[key])
    rows = []
    for b_name, c_name, how in pairs:
        b_value, c_value = bench[b_name], cmp[c_name]
        secret = compare_masked(b_value, c_value)
        if secret in (DIFFERENT, BOTH_SET):
            rows.append((file_name, b_name, c_name, _cell(b_value), _cell(c_value), f"{how}; {secret}", INFO))
        elif secret != SAME and not same_value(b_value, c_value):
            rows.append((file_name, b_name, c_name, _cell(b_value), _cell(c_value), how, ERROR))
        elif b_name != c_name:
            rows.append((file_name, b_name, c_name, _cell(b_value), _cell(c_value), f"renamed ({how})", INFO))
    for name in sorted(left):
        rows.append((file_name, name, "Only in benchmark", _cell(bench[name]), "") + _one_side(name))
    for name in sorted(right):
        rows.append((file_name, "Only in comparison", name, "", _cell(cmp[name])) + _one_side(name))
    rows.sort(key=lambda row: ({ERROR: 0, WARNING: 1}.get(row[6], 2), str(row[1])))
    return rows


def _one_side(name: str) -> Tuple[str, str]:
    """A precision flag on one side only (--bf16 against --fp16) changes every number: an error."""
    return ("precision flag", ERROR) if is_precision(name) else ("", WARNING)


def _unique(params: Dict[str, Any], key_of) -> Dict[str, str]:
    seen: Dict[str, Optional[str]] = {}
    for name in params:
        key = key_of(name)
        seen[key] = None if key in seen else name
    return {key: name for key, name in seen.items() if name is not None}


def _cell(value: Any) -> Any:
    return value if isinstance(value, (int, float, str)) and not isinstance(value, bool) else str(value)
