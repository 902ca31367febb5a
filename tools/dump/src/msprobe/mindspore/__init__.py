"""msprobe's MindSpore interface, also for PyTorch code on MindSpore (MSAdapter / MindTorch):
``from msprobe.mindspore import PrecisionDebugger, seed_all`` (seed doc 29)."""
from .debugger import PrecisionDebugger
from .seed import seed_all
from .weight_grads import patch_grad_functions

patch_grad_functions()  # MindSpore 2.0: weight gradients are only seen as ms.grad/value_and_grad return them

__all__ = ["PrecisionDebugger", "seed_all"]
