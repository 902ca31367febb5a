"""msprobe's PyTorch interface: ``from msprobe.pytorch import PrecisionDebugger, seed_all``."""
from .debugger import PrecisionDebugger
from .seed import seed_all

__all__ = ["PrecisionDebugger", "seed_all"]
