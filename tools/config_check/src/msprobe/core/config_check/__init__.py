"""config_check: collect what decides numerics in two environments, and say what differs (seed doc 31)."""
from .checker import ConfigChecker

__all__ = ["ConfigChecker"]
