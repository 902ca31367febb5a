"""The suite's file formats, defined once: dump.json, construct.json, stack.json, config.json, the dump tree.

Framework-free by design: importing this package imports neither torch nor mindspore.
"""
from .config import DebuggerConfig, TaskConfig, config_to_json, load_config, parse_config
from .construct import group_stacks, load_construct, load_stack, module_chain, validate_construct, validate_stack
from .dump import DumpFile, detect_framework, is_tensor_record, iter_records, load_dump, record_is_finite, validate_dump
from .errors import MsprobeError, SchemaError
from .journal import RankFiles, read_journal
from .names import EntryName, TensorFileName, parse_entry, parse_tensor_file, tensor_file, try_parse_entry
from .rank_writer import RankWriter
from .ranges import IntRanges
from .tree import DumpTree, RankDir, find_rank_dirs, rank_dir_name, scan_dump_tree, step_dir_name

__all__ = [
    "DebuggerConfig", "TaskConfig", "config_to_json", "load_config", "parse_config",
    "group_stacks", "load_construct", "load_stack", "module_chain", "validate_construct", "validate_stack",
    "DumpFile", "detect_framework", "is_tensor_record", "iter_records", "load_dump", "record_is_finite",
    "validate_dump", "MsprobeError", "SchemaError", "RankFiles", "RankWriter", "read_journal",
    "EntryName", "TensorFileName", "parse_entry", "parse_tensor_file", "tensor_file", "try_parse_entry",
    "IntRanges", "DumpTree", "RankDir", "find_rank_dirs", "rank_dir_name", "scan_dump_tree", "step_dir_name",
]
