"""Runtime of the scripts op_generate writes (imported by them, or inlined with ``--standalone``).

Runs one API on the side under test and on a torch CPU bench (floating inputs one step wider: float16 and
bfloat16 as float32, float32 as float64) with the same inputs, and both against a float64 torch CPU golden,
then writes ``./op_result_output/accuracy_checking_{details,result}_{YYYYmmddHHMMSS}.csv`` (verdict.py; the
script's ``-o DIR`` writes them to DIR instead).
Needs Python 3.9+, numpy and the frameworks of the two sides only.
"""
from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

from .verdict import TOLERANCES, rows, worst, write_reports

WIDER = {"float16": "float32", "bfloat16": "float32", "float32": "float64"}


@dataclass(frozen=True)
class Case:
    """What to run and how to judge it."""

    api: str
    """The API, ``Functional.softmax.3``."""
    framework: str
    """The side under test: ``mindspore``, ``mindtorch`` (MSAdapter) or ``pytorch``."""
    backward: bool = False
    """Also run the backward pass with the dumped output gradients, and judge the input gradients."""
    real_data: bool = False
    """Inputs from the dumped tensor files instead of drawn in the dumped [Min, Max]."""
    seed: int = 1234
    """Iteration ``i`` draws its random inputs with ``seed + i``."""
    iter_times: int = 1
    """Runs; above 1 the spread is reported and the tested side runs twice per iteration (nondeterminism)."""
    cosine: float = 0.99
    """A row passes when its cosine is above this..."""
    max_abs_err: float = 0.0001
    """...and its largest absolute error below this."""
    device: str = "auto"
    """Device of a torch side under test: ``auto`` takes npu, else cuda, else cpu."""


@dataclass(frozen=True)
class T:
    """A tensor argument: dtype name (``float32``, ``bfloat16``, ``int64``...), shape, dumped Min/Max, file."""

    dtype: str
    shape: Tuple[int, ...]
    min: Any = None
    max: Any = None
    file: Optional[str] = None


@dataclass(frozen=True)
class D:
    """A dtype argument, spelled by each side (``torch.float16`` / ``mindspore.float16``)."""

    name: str


class TorchSide:
    def __init__(self, device: str = "cpu", widen: str = "") -> None:
        import torch
        self.torch, self.device, self.widen = torch, device, widen

    def tensor(self, array: np.ndarray, dtype: str, grad: bool = False) -> Any:
        if dtype in WIDER and self.widen:
            dtype = "float64" if self.widen == "golden" else WIDER[dtype]
        out = self.torch.from_numpy(array.copy(order="C")).to(self.device, getattr(self.torch, dtype))
        return out.requires_grad_() if grad else out

    def dtype(self, name: str) -> Any:
        return getattr(self.torch, name)

    def is_tensor(self, value: Any) -> bool:
        return isinstance(value, self.torch.Tensor)

    def numpy(self, value: Any) -> np.ndarray:
        value = value.detach().cpu()
        return (value.float() if value.dtype == self.torch.bfloat16 else value).numpy()

    def dtype_name(self, value: Any) -> str:
        return str(value.dtype).replace("torch.", "")

    def grads(self, call: Callable, leaves: List[Any], sens: List[Any]) -> List[Any]:
        outs = [o for o in _flat(call(leaves), self.is_tensor) if o.requires_grad]
        sens = [s.to(o.dtype) for s, o in zip(sens, outs)]
        found = self.torch.autograd.grad(outs, leaves, sens, allow_unused=True)
        return [self.torch.zeros_like(x) if g is None else g for x, g in zip(leaves, found)]


class MindSporeSide:
    def __init__(self, adapter: bool) -> None:
        import mindspore
        self.ms = mindspore
        if adapter:
            import msadapter.pytorch as mtorch
            self.make = lambda array, dtype: mtorch.from_numpy(array).to(getattr(mtorch, dtype))
        else:
            self.make = lambda array, dtype: mindspore.Tensor(array, dtype=self.dtype(dtype))

    def tensor(self, array: np.ndarray, dtype: str, grad: bool = False) -> Any:
        return self.make(array.copy(order="C"), dtype)

    def dtype(self, name: str) -> Any:
        return getattr(self.ms, "bool_" if name == "bool" else name)

    def is_tensor(self, value: Any) -> bool:
        return isinstance(value, self.ms.Tensor) or hasattr(value, "asnumpy")

    def numpy(self, value: Any) -> np.ndarray:
        return (value.astype(self.ms.float32) if self.dtype_name(value) == "bfloat16" else value).asnumpy()

    def dtype_name(self, value: Any) -> str:
        return str(value.dtype).lower().replace("bool_", "bool")

    def grads(self, call: Callable, leaves: List[Any], sens: List[Any]) -> List[Any]:
        outs, backward = self.ms.vjp(lambda *xs: call(list(xs)), *leaves)
        found = backward(sens[0] if self.is_tensor(outs) else tuple(sens[:len(_flat(outs, self.is_tensor))]))
        return list(found) if isinstance(found, (tuple, list)) else [found]


def _flat(value: Any, is_tensor: Callable) -> List[Any]:
    if is_tensor(value):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for item in value for t in _flat(item, is_tensor)]
    return []


def _tested_side(case: Case) -> Any:
    if case.framework == "pytorch":
        return TorchSide(_device(case.device))
    return MindSporeSide(adapter=case.framework == "mindtorch")


def _device(device: str) -> str:
    if device != "auto":
        return device
    try:
        import torch_npu  # noqa: F401  (registers the npu device)
        return "npu"
    except ImportError:
        import torch
        return "cuda" if torch.cuda.is_available() else "cpu"


@dataclass(frozen=True)
class A:
    """A materialized tensor argument: its values (bfloat16 held as float32) and dtype name."""

    array: np.ndarray
    dtype: str


_BRANCH = object()


def _map(tree: Any, leaf: Callable[[Any], Any]) -> Any:
    """``tree`` (nested tuples, lists, dicts) with each value replaced by ``leaf(value)``; a value for which
    ``leaf`` returns ``_BRANCH`` is kept, or walked into when it is a container."""
    done = leaf(tree)
    if done is not _BRANCH:
        return done
    if isinstance(tree, (tuple, list)):
        return type(tree)(_map(item, leaf) for item in tree)
    if isinstance(tree, dict):
        return {key: _map(item, leaf) for key, item in tree.items()}
    return tree


def materialize(spec: Any, rng: Optional[np.random.RandomState]) -> Any:
    """The argument tree with each T replaced by an A: drawn with ``rng``, or loaded when ``rng`` is None."""
    return _map(spec, lambda x: A(_draw(x, rng) if rng is not None else _load(x), x.dtype) if isinstance(x, T)
                else _BRANCH)


def _np_dtype(name: str) -> Any:
    return np.dtype(np.float32 if name == "bfloat16" else name)


def _draw(spec: T, rng: np.random.RandomState) -> np.ndarray:
    """Uniform in [Min, Max], the first element Min and the last Max, so both bounds are reached."""
    dtype, shape = _np_dtype(spec.dtype), tuple(spec.shape)
    if spec.min is None or spec.max is None or int(np.prod(shape)) == 0:
        return np.zeros(shape, dtype)
    if dtype == np.bool_:
        out = rng.rand(*shape) < 0.5 if spec.min != spec.max else np.full(shape, bool(spec.max))
    elif np.issubdtype(dtype, np.integer):
        out = rng.randint(int(spec.min), int(spec.max) + 1, size=shape, dtype=np.int64)
    else:
        low, high = (float(b) if np.isfinite(float(b)) else 0.0 for b in (spec.min, spec.max))
        out = rng.uniform(min(low, high), max(low, high), size=shape)
    out = np.array(out, dtype=np.float64 if dtype.kind in "fc" else dtype)
    flat = out.reshape(-1)
    flat[0], flat[-1] = spec.min, spec.max
    return _bfloat16_round(out.astype(dtype)) if spec.dtype == "bfloat16" else out.astype(dtype)


def _bfloat16_round(array: np.ndarray) -> np.ndarray:
    """float32 values rounded (to nearest even) to bfloat16's 8 bits of mantissa: what each side will hold."""
    bits = array.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).astype(np.uint32)
    return np.where(np.isfinite(array), rounded.view(np.float32), array)


def _load(spec: T) -> np.ndarray:
    if not spec.file or not os.path.isfile(spec.file):
        raise SystemExit(f"op_generate: error: tensor file {spec.file!r} not found (real_data reads the dumped "
                         "tensor files: dump with task 'tensor', or use random_data)")
    if spec.file.endswith(".npy"):
        array = np.load(spec.file, allow_pickle=False)
    else:
        import torch
        tensor = torch.load(spec.file, map_location="cpu", weights_only=True)
        array = (tensor.float() if tensor.dtype == torch.bfloat16 else tensor).numpy()
    if list(array.shape) != list(spec.shape):
        raise SystemExit(f"op_generate: error: {spec.file}: shape {list(array.shape)}, the dump says "
                         f"{list(spec.shape)}")
    return array


def _build(tree: Any, side: Any, leaves: List[Any], grad: bool) -> Any:
    """The side's objects for a materialized tree; its floating tensors are appended to ``leaves``."""
    def leaf(value: Any) -> Any:
        if isinstance(value, D):
            return side.dtype(value.name)
        if not isinstance(value, A):
            return _BRANCH
        built = side.tensor(value.array, value.dtype, grad and value.dtype in TOLERANCES)
        if value.dtype in TOLERANCES:
            leaves.append(built)
        return built
    return _map(tree, leaf)


def _swap(tree: Any, side: Any, leaves: List[Any]) -> Any:
    """The built tree with its floating tensors taken, in order, from ``leaves`` (what is differentiated)."""
    return _map(tree, lambda x: (leaves.pop(0) if side.dtype_name(x) in TOLERANCES else x) if side.is_tensor(x)
                else _BRANCH)


def run_side(side: Any, fn: Callable, inputs: Any, sens: List[Any], backward: bool) -> Dict[str, list]:
    """(numpy array, dtype) of each output, and of each floating input's gradient; ``inputs`` = (args, kwargs)."""
    leaves: List[Any] = []
    built = _build(inputs, side, leaves, grad=backward)
    out = {"forward": [(side.numpy(t), side.dtype_name(t)) for t in _flat(fn(*built[0], **built[1]), side.is_tensor)]}
    if backward:
        def call(xs: List[Any]) -> Any:
            args, kwargs = _swap(built, side, list(xs))
            return fn(*args, **kwargs)
        grads = side.grads(call, leaves, [_build(s, side, [], False) for s in sens])
        out["backward"] = [(side.numpy(g), side.dtype_name(g)) for g in grads]
    return out


def main(case: Case, tested: Callable, bench: Callable, args: List[Any], kwargs: Optional[Dict[str, Any]] = None,
         grad_outputs: Tuple[Any, ...] = (), argv: Optional[List[str]] = None) -> int:
    """Run, judge, write the two CSVs; 0 when every row passes, 1 otherwise. ``argv``: the script's
    arguments (``sys.argv[1:]`` when None)."""
    out_dir = _arguments(case, argv).output
    sides = (_tested_side(case), TorchSide(widen="bench"), TorchSide(widen="golden"))
    by_name: Dict[str, List[Dict[str, Any]]] = {}
    notes: List[str] = []
    for index in range(case.iter_times):
        rng = None if case.real_data else np.random.RandomState(case.seed + index)
        inputs = materialize((list(args), dict(kwargs or {})), rng)
        sens = [materialize(s, rng) for s in grad_outputs]
        outs = [_guarded(side, fn, inputs, sens, case, notes, label)
                for side, fn, label in zip(sides, (tested, bench, bench), ("tested", "bench", "golden"))]
        again = _guarded(sides[0], tested, inputs, sens, case, notes, "tested") if case.iter_times > 1 else None
        if again is not None and outs[0] is not None and not _same_bits(outs[0], again):
            notes.append(f"nondeterministic: the tested side gave different bits on identical inputs "
                         f"(iteration {index})")
        for direction in ("forward", "backward") if case.backward else ("forward",):
            for k, row in enumerate(rows(case, direction, outs)):
                by_name.setdefault(f"{case.api}.{direction}.output.{k}", []).append(row)
    details = [worst(name, found, case.iter_times) for name, found in by_name.items()]
    return write_reports(case, details, sorted(set(notes)), out_dir)


def _arguments(case: Case, argv: Optional[List[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=f"Run {case.api} on the side under test and on the torch CPU "
                                                 f"bench, and judge both against a float64 golden.")
    parser.add_argument("-o", "--output", default="op_result_output",
                        help="folder of the two CSV reports (created if missing; default: ./op_result_output)")
    return parser.parse_args(argv)


def _guarded(side: Any, fn: Callable, inputs: Any, sens: List[Any], case: Case, notes: List[str], label: str) -> Any:
    try:
        return run_side(side, fn, inputs, sens, case.backward)
    except Exception as exc:  # the API failing is a finding: reported in the CSVs, not a traceback
        notes.append(f"{label} side failed: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
        return None


def _same_bits(first: Dict[str, list], second: Optional[Dict[str, list]]) -> bool:
    return second is not None and all(a.tobytes() == b.tobytes() for key in first
                                      for (a, _), (b, _) in zip(first[key], second[key]))
