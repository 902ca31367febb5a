"""construct.json ({node: parent | null | [parent, micro_step]}) and stack.json (two shapes)."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from .errors import PathLike, SchemaError, field_path
from .jsonio import load_json


def validate_construct(doc: Any, path: Optional[PathLike] = None) -> Dict[str, Optional[str]]:
    """Return {node: parent}; ``""`` and ``null`` both mean no parent, ``[parent, micro_step]`` keeps the parent."""
    if not isinstance(doc, dict):
        raise SchemaError(path, None, "expected a JSON object {node: parent}", type(doc).__name__, has_got=True)
    out: Dict[str, Optional[str]] = {}
    for node, parent in doc.items():
        if isinstance(parent, list) and parent and (parent[0] is None or isinstance(parent[0], str)):
            parent = parent[0]
        if parent is not None and not isinstance(parent, str):
            raise SchemaError(path, node, "expected a parent name, null or [parent, micro_step]", parent,
                              has_got=True)
        out[node] = parent or None
    return out


def load_construct(path: PathLike) -> Dict[str, Optional[str]]:
    return validate_construct(load_json(path), path)


def module_chain(construct: Dict[str, Optional[str]], node: str) -> List[str]:
    """Parents of a node from the innermost outwards, stopping at cycles."""
    chain, seen = [], {node}
    parent = construct.get(node)
    while parent and parent not in seen:
        chain.append(parent)
        seen.add(parent)
        parent = construct.get(parent)
    return chain


def validate_stack(doc: Any, path: Optional[PathLike] = None) -> Dict[str, List[str]]:
    """Normalise both stack.json shapes to {entry: [frame, ...]}.

    old: ``{entry: [frame, ...]}``; new: ``{"0": [[entry, ...], [frame, ...]], ...}`` (stacks de-duplicated).
    """
    if not isinstance(doc, dict):
        raise SchemaError(path, None, "expected a JSON object", type(doc).__name__, has_got=True)
    out: Dict[str, List[str]] = {}
    for key, value in doc.items():
        if (isinstance(value, list) and len(value) == 2 and isinstance(value[0], list)
                and isinstance(value[1], list) and all(isinstance(e, str) for e in value[0])):
            frames = _frames(value[1], path, field_path(key, 1))
            for entry in value[0]:
                out[entry] = frames
        elif isinstance(value, list):
            out[key] = _frames(value, path, key)
        elif isinstance(value, str):
            out[key] = [value] if value else []
        else:
            raise SchemaError(path, key, "expected a list of frames or [[entries], [frames]]", value, has_got=True)
    return out


def _frames(frames: List[Any], path: Optional[PathLike], where: str) -> List[str]:
    for index, frame in enumerate(frames):
        if not isinstance(frame, str):
            raise SchemaError(path, field_path(where, index), "expected a frame string", frame, has_got=True)
    return list(frames)


def load_stack(path: PathLike) -> Dict[str, List[str]]:
    return validate_stack(load_json(path), path)


def group_stacks(stacks: Dict[str, List[str]]) -> Dict[str, list]:
    """The new stack.json shape: identical stacks stored once, ``{"0": [[entries], [frames]]}``."""
    return {str(i): [entries, list(frames)] for i, (entries, frames) in enumerate(stack_groups(stacks))}


def stack_groups(stacks: Dict[str, List[str]]) -> List[Tuple[List[str], List[str]]]:
    """(entries, frames) of each distinct stack in ``stacks`` (entry -> frames), in the order of
    stack.json's groups: by first appearance; ``frames`` is the first entry's list."""
    groups: Dict[tuple, Tuple[List[str], List[str]]] = {}
    for entry, frames in stacks.items():
        key = tuple(frames)
        group = groups.get(key)
        if group is None:
            groups[key] = ([entry], frames)
        else:
            group[0].append(entry)
    return list(groups.values())


def construct_path(rank_dir: Path) -> Path:
    return Path(rank_dir) / "construct.json"
