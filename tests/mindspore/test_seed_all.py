"""seed_all for MindSpore (doc 29 §2.2), each case in a fresh interpreter (it patches dropout globally)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

SCRIPT = r"""
import json, os, random, sys
import mindspore as ms, numpy as np
from mindspore import ops, mint
from msprobe.mindspore import seed_all
seed_all(int(sys.argv[1]), mode=sys.argv[2] == "1", rm_dropout=sys.argv[3] == "1")
x = ms.Tensor(np.ones((4, 4), np.float32))
out = {"random": random.random(), "numpy": float(np.random.rand()), "hash": os.environ["PYTHONHASHSEED"],
       "ms": ops.standard_normal((3,)).asnumpy().tolist(), "hccl": os.environ.get("HCCL_DETERMINISTIC")}
out["ops.Dropout"] = bool((ops.Dropout(keep_prob=0.5)(x)[0] == x).all())
out["ops.Dropout2D"] = bool((ops.Dropout2D(keep_prob=0.5)(x.reshape(1, 1, 4, 4))[0] == 1).all())
out["ops.Dropout3D"] = bool((ops.Dropout3D(keep_prob=0.5)(x.reshape(1, 1, 1, 4, 4))[0] == 1).all())
if sys.argv[3] == "1":
    m = mint.nn.Dropout(p=0.5)
    m.set_train(True)
    out["mint.nn.Dropout"] = bool((m(x) == x).all())
    out["mint.nn.functional.dropout"] = bool((mint.nn.functional.dropout(x, p=0.5, training=True) == x).all())
print("RESULT" + json.dumps(out))
"""


def _run(seed: int, mode: bool, rm_dropout: bool) -> dict:
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(seed), str(int(mode)), str(int(rm_dropout))],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    line = [l for l in done.stdout.splitlines() if l.startswith("RESULT")][0]
    return json.loads(line[len("RESULT"):])


def test_seed_all_is_reproducible_and_removes_dropout():
    first, second = _run(1234, True, True), _run(1234, False, True)
    for key in ("random", "numpy", "ms"):
        assert first[key] == second[key], key
    assert first["hash"] == "1234"
    assert first["hccl"] == "true" and second["hccl"] is None  # deterministic reductions on Ascend (faked: env only)
    assert all(first[k] for k in ("ops.Dropout", "ops.Dropout2D", "ops.Dropout3D", "mint.nn.Dropout",
                                  "mint.nn.functional.dropout"))
    other = _run(7, False, False)
    assert other["ms"] != first["ms"]
    assert not other["ops.Dropout"]


def test_seed_all_rejects_bad_arguments():
    from msprobe.mindspore import seed_all
    from msprobe.schema import MsprobeError
    with pytest.raises(MsprobeError, match="seed"):
        seed_all(-1)
    with pytest.raises(MsprobeError, match="mode"):
        seed_all(1, mode="yes")
