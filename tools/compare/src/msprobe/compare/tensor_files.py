"""The tensor files of a ``tensor`` dump as numpy arrays, through the suite's one reader
(``msprobe.schema.tensor_file``: inside the dump only, ``.npy`` without pickles, ``.pt`` with
``weights_only=True``). A file that cannot be read is an error naming it (exit 2): a tensor comparison
that did not compare tensors must not pass. ``--statistics`` compares such dumps by their statistics."""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Tuple

import numpy as np

from msprobe.schema.tensor_file import load_tensor, locate


def load_array(tensor_dir: Path, data_name: str, max_bytes: int) -> Tuple[Optional[np.ndarray], str]:
    """(array squeezed, as msprobe compares it, "") or (None, why it was compared by statistics: too big);
    TensorFileError when the file is missing, outside the dump or unreadable."""
    path = locate(tensor_dir, data_name)
    size = path.stat().st_size
    if size > max_bytes:
        return None, f"{path.name}: {size} bytes, over the {max_bytes}-byte limit; compared by statistics."
    return np.squeeze(np.asarray(load_tensor(tensor_dir, data_name))), ""
