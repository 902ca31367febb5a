"""``ConfigChecker``: dynamic collection inside a training script (seed doc 31).

    ConfigChecker.apply_patches(fmk)                       # top of the first training script
    ConfigChecker(model, shell_path, output_zip_path, fmk) # after the model is built

Rank 0 writes env, pip and hyperparameters when the checker is made; every rank writes, before
each forward of ``model`` (one micro-step), the statistics of the weights and of the inputs, and
its random-number calls. The zip is complete when the process exits (or after ``finalize()``).
"""
from __future__ import annotations

import atexit
import sys
from pathlib import Path
from typing import Any, List, Optional, Sequence, Union

from msprobe.schema.errors import MsprobeError

from . import formats, randomness
from .collect import static_entries
from .masking import Masker
from .results import DEFAULT_RESULT
from .stats import adapter, describe
from .writer import PackWriter

PathLike = Union[str, Path]


class ConfigChecker:
    """Collects what decides numerics for one training process into a config_check pack."""

    def __init__(self, model: Any = None, shell_path: Optional[Union[PathLike, Sequence[PathLike]]] = None,
                 output_zip_path: PathLike = formats.DEFAULT_PACK, fmk: str = "pytorch") -> None:
        if not str(output_zip_path).endswith(".zip"):
            raise MsprobeError(f"config_check: output_zip_path must end with '.zip', got {str(output_zip_path)!r}")
        self._fw = adapter(fmk)
        if isinstance(model, (list, tuple)):
            model = model[0] if model else None  # Megatron model chunks: the first one, as msprobe does
        if model is not None and not self._fw.is_module(model):
            raise MsprobeError(f"config_check: model must be a {fmk} module, got {type(model).__name__}")
        self.model = model
        self.step = 0
        self.output_zip_path = Path(output_zip_path).resolve()
        self._recorder = randomness.active()
        if self._recorder is None:
            print("msprobe config_check: warning: ConfigChecker.apply_patches was not called at the top of the "
                  "script; random calls made before now are not recorded", file=sys.stderr)
            self._recorder = randomness.apply_patches(fmk)
        self._random_version = -1
        self._megatron_done = False
        self._finished = False
        self._writer = PackWriter(self.output_zip_path)
        self._masker = Masker()
        if self._fw.rank() == 0:
            for entry, data in static_entries(_paths(shell_path), self._masker).items():
                self._writer.put(entry, data)
        self._capture_megatron()
        if model is not None:
            self._handle = self._fw.pre_forward_hook(model, self._collect)
        self._writer.assemble(self._fw.rank(), self._fw.world_size(), finished=False)
        atexit.register(self.finalize)

    @staticmethod
    def apply_patches(fmk: str = "pytorch") -> None:
        """Start recording random-number calls (and capturing Megatron's arguments)."""
        randomness.apply_patches(fmk)

    @staticmethod
    def compare(bench_zip_path: PathLike, cmp_zip_path: PathLike, output_path: PathLike = DEFAULT_RESULT,
                fmk: str = "pytorch") -> int:
        """msprobe's static compare entry: writes the report into output_path; returns the exit code."""
        from .compare import compare_packs
        return compare_packs(Path(bench_zip_path), Path(cmp_zip_path), Path(output_path), fmk)

    def _collect(self, args: Any, kwargs: Any) -> None:
        rank = self._fw.rank()
        weights = {name: self._fw.features(param) for name, param in self._fw.named_parameters(self.model)}
        self._writer.put(formats.weights_entry(self.step, rank), formats.dumps(weights))
        inputs = {"args": describe(tuple(args), self._fw), "kwargs": describe(dict(kwargs or {}), self._fw)}
        self._writer.put(formats.dataset_entry(self.step, rank), formats.dumps(self._masker.tree(inputs)))
        self._write_random(rank)
        self._capture_megatron()
        self.step += 1

    def _write_random(self, rank: int) -> None:
        if self._recorder.version != self._random_version:
            self._random_version = self._recorder.version
            snapshot = self._masker.tree(self._recorder.snapshot())  # stacks quote source lines
            self._writer.put(formats.random_entry(rank), formats.dumps(snapshot))

    def _capture_megatron(self) -> None:
        """Megatron's parsed arguments, when megatron.training is in use and initialised."""
        module = sys.modules.get("megatron.training")
        if self._megatron_done or module is None or not hasattr(module, "get_args"):
            return
        try:
            args = module.get_args()
        except Exception:  # arguments not parsed yet: try again at the next micro-step
            return
        if args is None:
            return
        self._megatron_done = True
        if self._fw.rank() == 0:
            values = {key: _plain(value) for key, value in sorted(vars(args).items())}
            self._writer.put(formats.HYPER_DYNAMIC, formats.dumps(self._masker.tree(values)))

    def finalize(self) -> None:
        """Write the last random calls and build the zip; the last rank to finish completes it."""
        if self._finished:
            return
        self._finished = True
        rank = self._fw.rank()
        self._write_random(rank)
        self._writer.assemble(rank, self._fw.world_size(), finished=True)


def _paths(shell_path: Any) -> List[Path]:
    if shell_path is None:
        return []
    if isinstance(shell_path, (str, Path)):
        return [Path(shell_path)]
    return [Path(p) for p in shell_path]


def _plain(value: Any) -> Any:
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    text = str(value)
    return f"<{type(value).__name__}>" if " at 0x" in text else text

