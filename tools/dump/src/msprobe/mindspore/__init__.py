"""msprobe's MindSpore interface, also for PyTorch code on MindSpore (MSAdapter / MindTorch):
``from msprobe.mindspore import PrecisionDebugger, seed_all`` (seed doc 29)."""
from .debugger import PrecisionDebugger
from .seed import seed_all

__all__ = ["PrecisionDebugger", "seed_all"]
