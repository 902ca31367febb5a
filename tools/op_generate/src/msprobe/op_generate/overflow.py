"""``--from-overflow DUMP``: the config for the first API that overflow_check finds in a dump."""
from __future__ import annotations

from pathlib import Path

from msprobe.overflow import analyze_dump
from msprobe.schema import MsprobeError, parse_entry

from .apis import check_api_name
from .config import OpConfig


def config_from_overflow(dump: Path) -> OpConfig:
    """Forward reproduction, random data, of the API where the first overflow of the dump started."""
    for step in analyze_dump(dump, last=0):
        origin = step.origin
        if origin is None:
            continue
        entry = parse_entry(origin.op_name)
        if entry.kind != "api":
            raise MsprobeError(f"{dump}: the first overflow is in {origin.op_name}, a module; op_generate "
                               "reproduces one API (dump at level L1 or mix to see which)")
        api_name = f"{entry.prefix}.{entry.name}.{entry.call}"
        try:
            check_api_name(api_name)  # (an entry name from the dump becomes a file name and code)
        except MsprobeError as exc:
            raise MsprobeError(f"{dump}: the first overflow is in {origin.op_name!r}, {exc}") from None
        rank = origin.rank
        return OpConfig(api_name=api_name, dump_json_path=rank.dump_file or rank.path / "dump.json")
    raise MsprobeError(f"{dump}: overflow_check finds no inf/nan produced by an API; nothing to reproduce")
