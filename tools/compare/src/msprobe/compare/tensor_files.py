"""Reading the tensor files of a ``tensor`` dump (``dump_tensor_data/<data_name>``) as numpy arrays.

``.npy`` through numpy without pickles; ``.pt`` through ``torch.load(weights_only=True)`` (torch is
imported only when a ``.pt`` file is read). bfloat16 becomes float32 (numpy has no bfloat16) and
arrays are squeezed, as msprobe does before comparing.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Tuple

import numpy as np

from msprobe.schema import MsprobeError


def data_file(tensor_dir: Path, data_name: Optional[str]) -> Optional[Path]:
    """The file a record's ``data_name`` names, inside ``tensor_dir`` only; None when absent."""
    if not data_name:
        return None
    if "/" in data_name or "\\" in data_name or data_name in (".", ".."):
        raise MsprobeError(f"{tensor_dir}: field 'data_name' must be a file name, got {data_name!r}")
    path = tensor_dir / data_name
    return path if path.is_file() else None


def load_array(path: Path, max_bytes: int) -> Tuple[Optional[np.ndarray], str]:
    """(array, "") or (None, why it was not read)."""
    size = path.stat().st_size
    if size > max_bytes:
        return None, f"{path.name}: {size} bytes, over the {max_bytes}-byte limit; compared by statistics."
    try:
        if path.suffix == ".npy":
            array = np.load(path, allow_pickle=False)
        elif path.suffix == ".pt":
            array = _load_pt(path)
        else:
            return None, f"{path.name}: unsupported tensor file type."
    except (OSError, ValueError, RuntimeError) as exc:
        return None, f"{path.name}: cannot read ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})."
    return np.squeeze(array), ""


def _load_pt(path: Path) -> np.ndarray:
    import torch  # only for .pt files: the rest of the tool needs no framework

    value = torch.load(path, map_location="cpu", weights_only=True)
    if not isinstance(value, torch.Tensor):
        raise ValueError("not a tensor")
    value = value.detach()
    if value.dtype == torch.bfloat16:
        value = value.float()
    if value.is_complex() or value.dtype in (torch.bool,):
        value = value.to(torch.float64) if not value.is_complex() else value
    return value.numpy()
