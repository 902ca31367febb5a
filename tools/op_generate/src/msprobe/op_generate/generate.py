"""From config_op.json to ``OUT_DIR/{api_name}.{forward|backward}.py``."""
from __future__ import annotations

from pathlib import Path

from msprobe.schema import MsprobeError
from msprobe.schema.jsonio import path_kind, write_text_atomic

from .apis import check_api_name
from .config import OpConfig
from .extract import Extracted, extract_api, load_extracted, write_extracted
from .render import render_script


def extracted_for(config: OpConfig) -> Extracted:
    """The API's entries: from the dump (and written to ``extract_api_path`` when given), else from that file."""
    if config.dump_json_path is None:
        return load_extracted(config.extract_api_path, config.api_name)
    extracted = extract_api(config.dump_json_path, config.api_name)
    if config.extract_api_path is not None:
        write_extracted(config.extract_api_path, extracted)
    return extracted


def generate(config: OpConfig, out_dir: Path, force: bool = False, standalone: bool = False) -> Path:
    """Write the script and return its path; MsprobeError for anything the user can fix."""
    check_api_name(config.api_name)  # (the name makes the file's name: only identifiers, dots and a number)
    out_dir = Path(out_dir)
    _check_output_dir(out_dir)
    target = out_dir / f"{config.api_name}.{config.propagation}.py"
    if target.resolve().parent != out_dir.resolve():  # (a second guard: the name cannot leave -o)
        raise MsprobeError(f"{config.api_name}: the script's name would leave the output folder {out_dir}")
    extracted = extracted_for(config)
    if config.propagation == "backward" and extracted.backward is None:
        raise MsprobeError(f"{extracted.source}: no entry {config.api_name}.backward for propagation 'backward' "
                           "(the dump recorded no gradient of this call); use propagation 'forward'")
    if target.exists() and not force:
        raise MsprobeError(f"{target} exists; pass --force to overwrite it")
    text = render_script(extracted, config, standalone)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        write_text_atomic(target, text)
    except OSError as exc:
        raise MsprobeError(f"{out_dir}: cannot write the script there (-o/--api_output_path): "
                           f"{exc.strerror or exc}") from None
    return target


def _check_output_dir(out_dir: Path) -> None:
    """-o must be a folder or not exist yet (it is made when the script is written)."""
    kind = path_kind(out_dir)
    if kind not in ("directory", "missing"):
        raise MsprobeError(f"{out_dir}: -o/--api_output_path names a {kind}; expected a folder (it is created "
                           "when missing)")
