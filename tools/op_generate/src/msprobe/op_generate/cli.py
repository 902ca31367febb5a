"""``msprobe [-f mindspore|pytorch] op_generate -i config_op.json -o OUT_DIR``, also ``python -m msprobe.op_generate``."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from msprobe.schema import MsprobeError

from .config import OpConfig, load_op_config
from .generate import generate


def register(app: typer.Typer) -> None:
    app.command("op_generate")(op_generate)


def op_generate(
    config_input: Optional[Path] = typer.Option(None, "-i", "--config_input", "--config-input",
                                                help="config_op.json (dump_json_path, api_name, propagation...)."),
    api_output_path: Path = typer.Option(..., "-o", "--api_output_path", "--api-output-path",
                                         help="Folder for {api_name}.{forward|backward}.py (created if missing)."),
    from_overflow: Optional[Path] = typer.Option(None, "--from-overflow",
                                                 help="A dump: reproduce the first API overflow_check finds in it."),
    force: bool = typer.Option(False, "--force", help="Overwrite a script of the same name."),
    standalone: bool = typer.Option(False, "--standalone",
                                    help="Inline the runtime: the script then needs only numpy and the frameworks."),
) -> None:
    """Write a script that runs one API of a dump alone on the framework under test and on a torch CPU bench."""
    if (config_input is None) == (from_overflow is None):
        raise MsprobeError("op_generate: give exactly one of -i/--config_input and --from-overflow")
    if from_overflow is not None:
        from .overflow import config_from_overflow  # imports the overflow tool only when asked for

        config: OpConfig = config_from_overflow(from_overflow)
        typer.echo(f"first overflow: {config.api_name} in {config.dump_json_path}")
    else:
        config = load_op_config(config_input)
    path = generate(config, api_output_path, force=force, standalone=standalone)
    typer.echo(f"wrote {path}")


def standalone_app() -> typer.Typer:
    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    app.command()(op_generate)
    return app
