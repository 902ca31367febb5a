"""Root of the ``msprobe`` command. Subcommands come from the installed tools' entry points."""
from __future__ import annotations

import sys
from importlib import metadata
from typing import List, Optional

import typer

from ..schema.errors import MsprobeError
from ..schema.kinds import FRAMEWORKS
from . import config_check_cmd, demo, inspect_cmd
from .plugins import KNOWN_COMMANDS, install_hint, load_group
from .terminal import echo

DISTRIBUTION = "msprobe-shared"


def version() -> str:
    """The suite's version, from the installed metadata of the distribution that holds this command."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return f"unknown ({DISTRIBUTION} is not installed)"


def _version(value: bool) -> None:
    if value:
        typer.echo(f"msprobe {version()}")
        raise typer.Exit()


def _root(
    ctx: typer.Context,
    framework: Optional[str] = typer.Option(
        None, "-f", "--framework", help="pytorch or mindspore (required by msprobe 8.x, optional here; "
        "MSAdapter runs take mindspore)."),
    show_version: bool = typer.Option(False, "-V", "--version", callback=_version, is_eager=True,
                                      help="Print the version and exit."),
) -> None:
    """Precision debugging for deep-learning training: dump, overflow check, config and checkpoint compare."""
    if framework is not None and framework not in FRAMEWORKS:
        raise typer.BadParameter(f"expected one of {', '.join(FRAMEWORKS)}, got {framework!r}",
                                 param_hint="'-f' / '--framework'")
    ctx.obj = {"framework": framework}


def build_app() -> typer.Typer:
    # rich_markup_mode=None: click's plain help, in which a flag reads as a flag (typer's rich panels
    # print every boolean flag as "-d <bool>", as if it took a value)
    app = typer.Typer(no_args_is_help=True, pretty_exceptions_enable=False, rich_markup_mode=None,
                      context_settings={"help_option_names": ["-h", "--help"]}, callback=_root)
    inspect_cmd.register(app)
    demo.register(app)
    config_check_cmd.register(app)
    registered = {"inspect", "demo", "config_check"}
    for name, register in sorted(load_group("msprobe.commands").items()):
        if name not in registered:
            register(app)
            registered.add(name)
    for name, distribution in KNOWN_COMMANDS.items():
        if name not in registered:
            _add_missing(app, name, distribution)
    return app


def _add_missing(app: typer.Typer, name: str, distribution: str) -> None:
    @app.command(name, context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
                 help=f"(not installed: {install_hint(distribution)})", add_help_option=False)
    def missing() -> None:
        raise MsprobeError(f"'msprobe {name}' comes with the package {distribution}, which is not installed: "
                           f"{install_hint(distribution)}")


def main(argv: Optional[List[str]] = None) -> None:
    app = build_app()
    try:
        result = app(args=argv, prog_name="msprobe", standalone_mode=False)
    except MsprobeError as exc:
        # one line, whatever it quotes (a name from a dump: its control characters escaped)
        echo("msprobe: error: " + " ".join(str(exc).splitlines()), err=True)
        sys.exit(exc.exit_code)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        typer.echo("msprobe: aborted", err=True)
        sys.exit(130)
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as exc:
        # Usage errors (click's, vendored by recent typer): one line like every other error, exit code 2;
        # a command given no arguments still shows its help
        if hasattr(exc, "show") and isinstance(getattr(exc, "exit_code", None), int):
            if type(exc).__name__ == "NoArgsIsHelpError" or not hasattr(exc, "format_message"):
                exc.show()
            else:
                ctx = getattr(exc, "ctx", None)
                path = ctx.command_path if ctx is not None else "msprobe"
                said = " ".join(exc.format_message().splitlines())
                typer.echo(f"msprobe: error: {said} (see '{path} -h')", err=True)
            sys.exit(exc.exit_code)
        raise
    sys.exit(result if isinstance(result, int) else 0)


if __name__ == "__main__":
    main()
