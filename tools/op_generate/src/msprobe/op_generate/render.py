"""The text of a generated script: the call, its inputs as the dump describes them, the verdict."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Dict, List, Optional

from msprobe.schema import MsprobeError, iter_records
from msprobe.schema.dump import is_tensor_record, stat_value

from .apis import ApiCall, resolve
from .config import OpConfig
from .extract import Extracted

RUNTIME_IMPORT = "from msprobe.op_generate.runtime import Case, D, T, main\n"
FUTURE = "from __future__ import annotations\n"
VERDICT_IMPORT = "from .verdict import TOLERANCES, rows, worst, write_reports\n"
DTYPES = ("float16", "bfloat16", "float32", "float64", "complex64", "complex128", "bool", "uint8", "int8", "int16",
          "int32", "int64")
DTYPE_TYPES = ("torch.dtype", "mindspore.dtype", "mindspore.common.dtype", "dtype")
SIDES = {"mindspore": "MindSpore", "mindtorch": "MSAdapter (MindTorch)", "pytorch": "torch"}


def render_script(extracted: Extracted, config: OpConfig, standalone: bool = False) -> str:
    forward, framework = extracted.forward, extracted.framework or "pytorch"
    where = f"{extracted.source}: data.{extracted.api_name}.forward"  # errors name the file and the field
    args = [_value(v, config, f"{where}.input_args[{i}]") for i, v in enumerate(forward.get("input_args") or [])]
    kwargs = {k: _value(v, config, f"{where}.input_kwargs.{k}") for k, v in (forward.get("input_kwargs") or {}).items()}
    call = resolve(extracted.api_name, framework, args, kwargs)
    backward = config.propagation == "backward"
    # Text from the inputs enters the script only as checked names (the API: identifiers, resolve() checked it
    # against the API table) or as repr literals: the dump's path never goes into the docstring or a comment.
    lines = [f'"""{extracted.api_name} ({config.propagation}) from the dump named in SOURCE:',
             f"{SIDES[framework]} {call.tested.lstrip('.')} under test, "
             f"torch {call.bench.lstrip('.')} on CPU as bench.",
             "",
             "Written by msprobe op_generate. Run: python THIS_FILE [-o DIR]  (writes ./op_result_output/*.csv, or DIR)",
             '"""']
    imports = [f"import {module}" for module in call.imports] + [""]
    # (an inlined runtime starts with its ``from __future__`` import, which must come first)
    lines += [_runtime_source()] + imports if standalone else imports + [RUNTIME_IMPORT]
    lines += ["", f"SOURCE = {str(extracted.source)!r}", f"CASE = Case(api={extracted.api_name!r}, framework={framework!r}, backward={backward}, "
              f"real_data={config.data_mode == 'real_data'},",
              f"            seed={config.random_seed}, iter_times={config.iter_times}, "
              f"cosine={config.cosine_threshold!r}, max_abs_err={config.max_abs_error_threshold!r})",
              "ARGS = [" + "".join(f"\n    {a}," for a in args) + ("\n]" if args else "]"),
              "KWARGS = {" + ", ".join(f"{k!r}: {v}" for k, v in kwargs.items()) + "}"]
    if backward:
        lines.append("GRAD_OUTPUTS = [" + "".join(f"\n    {g}," for g in _grad_outputs(extracted, config)) + "\n]")
    lines += ["", ""] + _functions(call, kwargs) + ["", 'if __name__ == "__main__":',
                                                    f"    raise SystemExit(main(CASE, tested, bench, ARGS, KWARGS"
                                                    f"{', GRAD_OUTPUTS' if backward else ''}))", ""]
    return "\n".join(lines)


def _runtime_source() -> str:
    """verdict.py then runtime.py, as one block of code that imports nothing from the suite."""
    here = Path(__file__).parent
    verdict, runtime = ((here / name).read_text(encoding="utf-8") for name in ("verdict.py", "runtime.py"))
    runtime = runtime[runtime.index(FUTURE) + len(FUTURE):].replace(VERDICT_IMPORT, "")
    return ("# --- runtime of msprobe op_generate (inlined by --standalone) ---\n"
            + verdict[verdict.index(FUTURE):] + runtime + "# --- end of runtime ---\n")


def _functions(call: ApiCall, kwargs: Dict[str, str]) -> List[str]:
    renames = {k: v for k, v in call.kwarg_renames.items() if k in kwargs}
    out = []
    for name, target in (("tested", call.tested), ("bench", call.bench)):
        out += [f"def {name}(*args, **kwargs):"]
        if name == "bench" and renames:
            out.append(f"    kwargs = {{{renames!r}.get(k, k): v for k, v in kwargs.items()}}  # the torch spelling")
        method = target.startswith(".")
        callee, rest = ("args[0]" + target, "*args[1:]") if method else (target, "*args")
        out += [f"    return {callee}({rest}, **kwargs)",
                "", ""]
    return out[:-1]


def _grad_outputs(extracted: Extracted, config: OpConfig) -> List[str]:
    """The dumped gradients of the forward outputs; zeros for outputs that got none."""
    where = f"{extracted.source}: data.{extracted.api_name}.backward.input"
    grads = [_tensor(r, config, f"{where}{_trail(t)}") for t, r in iter_records(extracted.backward.get("input") or [])]
    outputs = [r for _, r in iter_records(extracted.forward.get("output") or [])]
    for record in outputs[len(grads):]:
        grads.append(f"T({_dtype(record, where)!r}, {tuple(record.get('shape') or ())!r}, 0, 0)")
    return grads


def _trail(trail: tuple) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in trail)


def _value(value: Any, config: OpConfig, where: str) -> str:
    """Python source rebuilding one dumped argument."""
    if value is None:
        return "None"
    if is_tensor_record(value):
        return _tensor(value, config, where)
    if isinstance(value, list):
        items = [_value(v, config, f"{where}[{i}]") for i, v in enumerate(value)]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    if isinstance(value, dict) and "type" in value:
        return _scalar(value, where)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_value(v, config, f'{where}.{k}')}" for k, v in value.items()) + "}"
    raise MsprobeError(f"{where}: cannot rebuild the argument {value!r}")


def _scalar(value: Dict[str, Any], where: str) -> str:
    kind, raw = value["type"], value.get("value")
    if kind in ("int", "bool", "str") or kind == "float" and isinstance(raw, (int, float)) and math.isfinite(raw):
        return repr(raw)
    if kind == "float":
        return f"float({str(raw).lower().replace('infinity', 'inf')!r})"
    if kind == "slice" and isinstance(raw, list) and len(raw) == 3:
        return f"slice({', '.join(_plain(v) for v in raw)})"
    if kind in ("ellipsis", "builtins.ellipsis", "Ellipsis"):
        return "..."
    if kind in DTYPE_TYPES and isinstance(raw, str):
        return f"D({_dtype_name(raw, where)!r})"
    if kind == "torch.Size" and isinstance(raw, list):
        return repr(tuple(raw))
    if kind == "torch.device":  # the bench and golden run on the CPU; a move elsewhere is the tested side's job
        return "'cpu'"
    raise MsprobeError(f"{where}: cannot rebuild an argument of type {kind!r} (value {raw!r})")


def _plain(value: Any) -> str:
    return repr(value.get("value") if isinstance(value, dict) else value)


def _tensor(record: Dict[str, Any], config: OpConfig, where: str) -> str:
    shape = tuple(record.get("shape") or ())
    low, high = _stat(record.get("Min")), _stat(record.get("Max"))
    text = f"T({_dtype(record, where)!r}, {shape!r}, {low}, {high}"
    if config.data_mode == "real_data":
        name = record.get("data_name")
        if not name:
            raise MsprobeError(f"{where}: no tensor file (data_name) for real_data; dump with task 'tensor', "
                               "or use data_mode random_data")
        if not Path(name).is_file():
            raise MsprobeError(f"{where}: tensor file {name} not found (real_data reads the dumped tensor files)")
        text += f", file={name!r}"
    return text + ")"


def _stat(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return repr(value)
    number = stat_value(value)  # (a 401-digit integer reads as inf; a string as its number)
    if number is None:
        return "None"
    if not math.isfinite(number):
        return f"float({str(number)!r})"
    return repr(value) if isinstance(value, (int, float)) else repr(number)


def _dtype(record: Dict[str, Any], where: str) -> str:
    return _dtype_name(str(record.get("dtype")), where)


def _dtype_name(spelled: str, where: str) -> Optional[str]:
    """``torch.float32`` / ``Float32`` / ``BFloat16`` → ``float32`` / ``bfloat16``."""
    name = spelled.split(".")[-1].lower().rstrip("_")
    if name not in DTYPES:
        raise MsprobeError(f"{where}: dtype {spelled!r} is not one op_generate can make ({', '.join(DTYPES)})")
    return name
