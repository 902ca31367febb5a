"""What the byte-identity test compares: a dump's JSON files as written (the dump's own folder, the checkout's
and the interpreter's paths replaced by placeholders) and one SHA-256 line per tensor file."""
from __future__ import annotations

import hashlib
import sys
import sysconfig
from pathlib import Path
from typing import Dict

REPO = Path(__file__).resolve().parents[3]
MANIFEST = "tensors.sha256"


def _placeholders(text: bytes, root: Path) -> bytes:
    for path, name in ((str(root.resolve()), b"<dump>"), (sysconfig.get_paths()["purelib"], b"<site>"),
                       (sys.prefix, b"<prefix>"), (str(REPO), b"<repo>")):
        text = text.replace(path.encode(), name)
    return text


def collected(root: Path) -> Dict[str, bytes]:
    """relative path -> bytes, for every file of the dump under ``root``."""
    files: Dict[str, bytes] = {}
    tensors = []
    # (the statistics index, dump.index.parquet, is written from dump.json's bytes: test_index_beside.py)
    for path in sorted(p for p in root.rglob("*") if p.is_file() and p.name != "dump.index.parquet"):
        relative = path.relative_to(root).as_posix()
        if path.suffix in (".pt", ".npy"):
            tensors.append(f"{hashlib.sha256(path.read_bytes()).hexdigest()}  {relative}\n")
        else:
            data = path.read_bytes()
            files[relative] = _placeholders(data, root)
    if tensors:
        files[MANIFEST] = "".join(tensors).encode()
    return files


def write(root: Path, target: Path) -> None:
    """Store ``collected(root)`` under ``target`` (how data/ was made)."""
    for relative, data in collected(root).items():
        out = target / relative
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(data)


if __name__ == "__main__":
    write(Path(sys.argv[1]), Path(sys.argv[2]))
