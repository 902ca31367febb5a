"""Reading a rank directory without the per-record validation pass, for readers that touch every record
anyway and can afford to validate only when something does not fit (``msprobe compare`` on 100,000-entry
dumps: the validation pass costs as much as parsing the JSON).

A reader using this must, on any TypeError / ValueError / KeyError / AttributeError from the data, call
:func:`explain` — it runs the full validation and raises the SchemaError naming file and field.
"""
from __future__ import annotations

from .construct import load_construct, load_stack
from .dump import DumpFile, detect_framework, validate_dump
from .errors import SchemaError
from .journal import CONSTRUCT_NAME, DUMP_NAME, STACK_NAME, RankFiles
from .jsonio import load_json
from .tree import RankDir


def load_rank_unchecked(rank: RankDir) -> RankFiles:
    """What ``rank.load()`` returns, the dump's records not validated (journals and named files are)."""
    if rank.interrupted or rank.dump_file is not None:
        return rank.load()
    path = rank.path / DUMP_NAME
    doc = load_json(path)
    if not isinstance(doc, dict) or not isinstance(doc.get("data"), dict):
        validate_dump(doc, path)
    extra = {k: v for k, v in doc.items() if k not in ("task", "level", "framework", "dump_data_dir", "data")}
    dump = DumpFile(data=doc["data"], task=doc.get("task"), level=doc.get("level"), framework=detect_framework(doc),
                    dump_data_dir=doc.get("dump_data_dir"), path=str(path), extra=extra)
    construct_file, stack_file = rank.path / CONSTRUCT_NAME, rank.path / STACK_NAME
    construct = load_construct(construct_file) if construct_file.is_file() else {}
    stacks = load_stack(stack_file) if stack_file.is_file() else {}
    return RankFiles(dump=dump, construct=construct, stacks=stacks)


def explain(error: Exception, *ranks: RankDir) -> SchemaError:
    """The SchemaError behind ``error`` raised while using unchecked ranks; ``error`` itself is raised
    again when every rank validates (then it was not the data's fault)."""
    for rank in ranks:
        try:
            rank.load()
        except SchemaError as found:
            return found
    raise error
