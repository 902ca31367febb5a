"""op_generate: a script that reproduces one API of a dump alone, on the framework under test and on a torch
CPU bench with the same inputs, each judged against a float64 golden (seed doc 33, FORMATS.md §8).

``load_op_config(path)`` reads config_op.json, ``generate(config, out_dir)`` writes the script; the script
imports :mod:`msprobe.op_generate.runtime` (or holds it, ``standalone=True``).
"""
from __future__ import annotations

from .config import OpConfig, load_op_config, parse_op_config
from .extract import Extracted, extract_api, load_extracted
from .generate import generate

__all__ = ["OpConfig", "load_op_config", "parse_op_config", "Extracted", "extract_api", "load_extracted", "generate"]
