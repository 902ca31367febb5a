"""Python's reflected operators that torch writes in Python and msprobe's list lacks (``1 / x``, ``2 // x``,
``x.__rmatmul__(m)``, ``1 << i``, ``64 >> i``), one step under ``PrecisionDebugger`` at L1: whichever msprobe
imports (the suite's, or upstream's in its venv) dumps into ``$MSPROBE_OUT``."""
import json
import os

import torch

from msprobe.pytorch import PrecisionDebugger

out = os.environ["MSPROBE_OUT"]
config = os.path.join(out, "config.json")
with open(config, "w") as f:
    json.dump({"task": "statistics", "dump_path": out, "level": "L1", "step": [0]}, f)
debugger = PrecisionDebugger(config_path=config)
torch.manual_seed(0)
x = (torch.rand(2, 2) + 0.5).requires_grad_()
shifts = torch.arange(4).reshape(2, 2)
debugger.start()
y = 1 / x + x.__rmatmul__(torch.eye(2)) + 5 // x.detach()
z = (1 << shifts) + (64 >> shifts)
y.sum().backward()
debugger.stop()
debugger.step()
