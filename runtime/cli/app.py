"""The `dsh` command: the root typer app (`--version`, `--debug`), its core commands, the commands that plugins and
replay add through the `dsh.commands` entry-point group, and how a failure reaches the user (one line, or the
traceback with `--debug`)."""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, entry_points, version
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from runtime.kernel import DshError

from .chat_cmd import chat
from .config_cmd import config_app
from .prompt_cmd import prompt
from .run_cmd import run
from .sessions_cmd import sessions_app

__all__ = ["ENTRY_POINT_GROUP", "add_entry_point_commands", "app", "main"]

ENTRY_POINT_GROUP = "dsh.commands"

app = typer.Typer(
    name="dsh",
    help="dsh: an event-sourced agent runtime with replay testing.\n\n"
    "Example: dsh chat --config examples/coding-agent.yml",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.add_typer(config_app, name="config")
app.add_typer(sessions_app, name="sessions")
app.command("prompt")(prompt)
app.command("run")(run)
app.command("chat")(chat)


class _State:
    debug = False


def _version() -> str:
    try:
        return version("dsh")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "unknown"


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"dsh {_version()}")
        raise typer.Exit()


@app.callback()
def _root(
    debug: Annotated[
        bool, typer.Option("--debug", help="Print the traceback of an error instead of one line.")
    ] = False,
    show_version: Annotated[
        bool,
        typer.Option("--version", help="Print the version and exit.", callback=_show_version, is_eager=True),
    ] = False,
) -> None:
    """dsh: an event-sourced agent runtime with replay testing."""
    _State.debug = debug


_added: set[str] = set()


def add_entry_point_commands() -> None:
    """Add each `dsh.commands` entry point once: a `typer.Typer` becomes a command group, a function a command."""
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        if entry.name in _added:
            continue
        target = entry.load()
        if isinstance(target, typer.Typer):
            app.add_typer(target, name=entry.name)
        elif callable(target):
            command: Callable[..., Any] = target
            app.command(entry.name)(command)
        else:
            raise TypeError(f"entry point {entry.name} = {entry.value} must name a typer.Typer or a function")
        _added.add(entry.name)


def _fail(message: str, code: int) -> None:
    Console(stderr=True).print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    sys.exit(code)


def _alone(error: BaseExceptionGroup[BaseException]) -> BaseException:
    """The one exception a task group wrapped, or the group itself when it holds more (or nested several)."""
    inner: BaseException = error
    while isinstance(inner, BaseExceptionGroup) and len(inner.exceptions) == 1:
        inner = inner.exceptions[0]
    return inner


def main(argv: list[str] | None = None) -> None:
    """Run `dsh`. A DshError prints one line and exits 2, a usage error prints the usage and exits 2, anything
    unexpected prints one line naming its type and exits 1; `--debug` prints the traceback instead. An error that
    a task group wrapped alone is reported as itself."""
    _State.debug = False
    add_entry_point_commands()
    try:
        try:
            code = app(args=argv, prog_name="dsh", standalone_mode=False)
        except BaseExceptionGroup as grouped:
            alone = _alone(grouped)
            if alone is grouped:
                raise
            raise alone from grouped
        if isinstance(code, int) and code:  # a typer.Exit(code) that click handed back instead of raising
            sys.exit(code)
    except typer.Exit as done:
        sys.exit(done.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        sys.exit(130)
    except typer.TyperException as error:  # usage errors: click's own wording, with the usage line
        show = getattr(error, "show", None)
        if callable(show):
            show()
            sys.exit(error.exit_code)
        _fail(error.format_message(), error.exit_code)
    except DshError as error:
        if _State.debug:
            traceback.print_exc()
        _fail(str(error), 2)
    except Exception as error:
        if _State.debug:
            traceback.print_exc()
        _fail(
            f"{type(error).__name__}: {error} (this is a bug in dsh or a plugin; rerun as `dsh --debug ...` for the traceback)",
            1,
        )
