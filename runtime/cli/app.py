"""The `dsh` command: the root typer app, its core command groups, and the groups that plugins and replay add
through the `dsh.commands` entry-point group (each entry point names a `typer.Typer` group or a command function)."""

from __future__ import annotations

import sys
from importlib.metadata import entry_points

import typer
from rich.console import Console

from runtime.kernel import DshError

from .config_cmd import config_app
from .prompt_cmd import prompt
from .run_cmd import run
from .sessions_cmd import sessions_app

__all__ = ["app", "main"]

app = typer.Typer(
    name="dsh",
    help="dsh: an event-sourced agent runtime with replay testing.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.add_typer(config_app, name="config")
app.add_typer(sessions_app, name="sessions")
app.command("prompt")(prompt)
app.command("run")(run)

ENTRY_POINT_GROUP = "dsh.commands"


def _add_entry_point_groups() -> None:
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        loaded = entry.load()
        if isinstance(loaded, typer.Typer):
            app.add_typer(loaded, name=entry.name)
        elif callable(loaded):
            app.command(entry.name)(loaded)
        else:
            raise TypeError(
                f"entry point {entry.name} = {entry.value} must name a typer.Typer or a command function"
            )


def main() -> None:
    """Run `dsh`; a DshError is printed as one clear line and exits with status 2."""
    _add_entry_point_groups()
    try:
        app(standalone_mode=False)
    except DshError as error:
        Console(stderr=True).print(f"[bold red]error:[/] {error}", highlight=False, soft_wrap=True)
        sys.exit(2)
    except typer.Exit as done:
        sys.exit(done.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        sys.exit(130)
