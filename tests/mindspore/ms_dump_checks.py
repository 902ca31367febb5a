"""Checks shared by the MindSpore-native and the MSAdapter tests: every statistic of a dump recomputed
with numpy from its .npy files (host numpy, float64)."""
from __future__ import annotations

import math
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any, Dict, List

import numpy as np

from msprobe.schema import find_rank_dirs, iter_records

DTYPES = {"Float32": np.float32, "Float16": np.float16, "Float64": np.float64, "BFloat16": np.float32,
          "Int32": np.int32, "Int64": np.int64, "Bool": np.bool_, "UInt8": np.uint8, "Int8": np.int8}


def close(got: Any, want: float, rel: float = 2e-5, scale: float = 0.0) -> bool:
    if got is None:
        return False
    got = float(got)
    if math.isnan(want):
        return math.isnan(got)
    return abs(got - want) <= rel * max(abs(want), scale) + 1e-7


def finish(debugger: Any) -> None:
    """What process exit does (the engine's atexit hook): every file final, and the directory the engine
    prepared for a next step that never came removed, so the tree is complete for readers."""
    debugger.engine.close()


def check_record(record: Dict[str, Any], array: np.ndarray) -> None:
    where = record.get("data_name")
    assert record["type"] == "mindspore.Tensor", where
    assert list(array.shape) == record["shape"], where
    assert array.dtype == DTYPES[record["dtype"]], (where, record["dtype"], array.dtype)
    if array.size == 0:
        assert record["Max"] is None and record["Norm"] is None, where
        return
    if array.dtype == np.bool_:
        assert record["Max"] == bool(array.any()) and record["Min"] == bool(array.all()), where
        assert record["Mean"] is None and record["Norm"] is None, where
        return
    wide = array.astype(np.float64)
    amax = float(np.abs(wide).max())
    assert close(record["Max"], float(wide.max())), (where, record["Max"], wide.max())
    assert close(record["Min"], float(wide.min())), (where, record["Min"], wide.min())
    assert close(record["Mean"], float(wide.mean()), scale=amax), (where, record["Mean"], wide.mean())
    assert close(record["Norm"], float(np.sqrt((wide * wide).sum()))), (where, record["Norm"])


def check_dump_against_npy(dump_path: Path) -> int:
    """Every tensor record of every rank directory matches numpy on its .npy file; returns the count."""
    checked = 0
    for rank in find_rank_dirs(dump_path):
        files = rank.load()
        for name, entry in files.dump.data.items():
            for _, record in iter_records(entry):
                data_name = record.get("data_name")
                assert data_name, f"{name}: tensor record without data_name"
                array = np.load(rank.tensor_dir / data_name)
                check_record(record, array)
                if "md5" in record:
                    assert record["md5"] == f"{zlib.crc32(array.tobytes()) & 0xFFFFFFFF:08x}"
                checked += 1
    return checked


def inspect_ok(dump_path: Path) -> str:
    """``msprobe inspect`` on the dump: exit 0; returns its output."""
    done = subprocess.run([sys.executable, "-m", "msprobe.cli.main", "inspect", str(dump_path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def entries(dump_path: Path, step: int = 0) -> Dict[str, Any]:
    ranks = [r for r in find_rank_dirs(dump_path) if r.step == step]
    assert ranks, f"no step{step} under {dump_path}"
    return ranks[0].load().dump.data


def grad_array(dump_path: Path, entry: Dict[str, Any], side: str, index: int, step: int = 0) -> np.ndarray:
    ranks = [r for r in find_rank_dirs(dump_path) if r.step == step]
    return np.load(ranks[0].tensor_dir / entry[side][index]["data_name"])


def names(dump_path: Path, step: int = 0) -> List[str]:
    return list(entries(dump_path, step))
