"""The `dsh` command: the root typer app (`--version`, `--debug`), its core commands, the commands that plugins and
replay add through the `dsh.commands` entry-point group, and how a failure reaches the user (one line, or the
traceback with `--debug`).

Nothing is imported before its command runs: the root group knows each command by name and one line of help (from
the command table in `_commands`: the core commands' own, an entry point's from its metadata) and imports the module
only when the command is invoked, so a command never pays for the ACP SDK or the agent loop it does not use."""

from __future__ import annotations

import sys
from collections.abc import Callable
from difflib import get_close_matches
from importlib import import_module
from typing import Annotated, Any

import typer
from typer import _click as click
from typer.core import TyperCommand, TyperGroup, TyperOption

from ._commands import (
    CORE_COMMANDS,
    ENTRY_POINT_GROUP,
    ROOT_HELP,
    ROOT_OPTIONS,
    LazyCommand,
    entry_point_commands,
)
from ._entry import version

__all__ = ["CORE_COMMANDS", "ENTRY_POINT_GROUP", "add_entry_point_commands", "app", "loaded_command", "main"]


def _load(name: str, lazy: LazyCommand) -> click.Command:
    module, _, attribute = lazy.target.partition(":")
    target: object = getattr(import_module(module), attribute)
    if isinstance(target, typer.Typer):
        group = typer.main.get_group(target)
        group.name = name
        return group
    if callable(target):
        single = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
        command: Callable[..., Any] = target
        single.command(name)(command)
        return typer.main.get_command(single)
    raise TypeError(f"command {name} = {lazy.target} must name a typer.Typer or a function")


_loaded: dict[str, click.Command] = {}


def loaded_command(name: str) -> click.Command | None:
    """The command `name`, its module imported (once); None for a name `dsh` does not know."""
    if name in _loaded:
        return _loaded[name]
    lazy = CORE_COMMANDS.get(name) or entry_point_commands().get(name)
    if lazy is None:
        return None
    _loaded[name] = command = _load(name, lazy)
    return command


class _LazyGroup(TyperGroup):
    """The root group: lists every command without importing it, and imports one only to run it (or show its
    own help)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [*CORE_COMMANDS, *entry_point_commands()]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in _loaded:
            return _loaded[cmd_name]
        lazy = CORE_COMMANDS.get(cmd_name) or entry_point_commands().get(cmd_name)
        if lazy is None:
            return None
        return TyperCommand(cmd_name, help=lazy.summary, short_help=lazy.summary)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        if args:
            loaded_command(args[0])
        try:
            return super().resolve_command(ctx, args)
        except click.exceptions.UsageError as error:
            # typer suggests from the commands already added, which a lazy group has none of: suggest from all
            close = get_close_matches(args[0], self.list_commands(ctx)) if args else []
            if close and "Did you mean" not in error.message:
                error.message = f"{error.message.rstrip('.')}. Did you mean {', '.join(map(repr, close))}?"
            raise


app = typer.Typer(
    name="dsh",
    cls=_LazyGroup,
    help=ROOT_HELP,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=True,
)


class _State:
    debug = False


_typer_display_type = TyperOption.display_type_rich


def _display_type(self: TyperOption, ctx: click.Context) -> str | None:
    """A flag takes no value, so its help shows none (typer shows `<bool>`, as if `--flag true` were the way to
    write it); every other option keeps its type."""
    return None if self.is_flag else _typer_display_type(self, ctx)


TyperOption.display_type_rich = _display_type  # type: ignore[method-assign]  # typer has no hook for it


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"dsh {version()}")
        raise typer.Exit()


@app.callback()
def _root(
    debug: Annotated[bool, typer.Option("--debug", help=ROOT_OPTIONS["--debug"])] = False,
    show_version: Annotated[
        bool,
        typer.Option("--version", help=ROOT_OPTIONS["--version"], callback=_show_version, is_eager=True),
    ] = False,
) -> None:
    """dsh: an event-sourced agent runtime with replay testing."""
    _State.debug = debug


def add_entry_point_commands() -> None:
    """Import every command now (core and `dsh.commands` entry points), e.g. to walk all their help."""
    for name in [*CORE_COMMANDS, *entry_point_commands()]:
        loaded_command(name)


def _fail(message: str, code: int) -> None:
    from rich.console import Console
    from rich.markup import escape

    Console(stderr=True).print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    sys.exit(code)


def _alone(error: BaseExceptionGroup[BaseException]) -> BaseException:
    """The one exception a task group wrapped, or the group itself when it holds more (or nested several)."""
    inner: BaseException = error
    while isinstance(inner, BaseExceptionGroup) and len(inner.exceptions) == 1:
        inner = inner.exceptions[0]
    return inner


def _is_dsh_error(error: BaseException) -> bool:
    # A DshError can only have been raised once the kernel's error module is imported: looking it up in
    # sys.modules spares the commands that never load the kernel its import.
    errors = sys.modules.get("dsh.runtime.kernel.errors")
    return errors is not None and isinstance(error, errors.DshError)


def main(argv: list[str] | None = None) -> None:
    """Run `dsh`. A DshError prints one line and exits 2, a usage error prints the usage and exits 2, anything
    unexpected prints one line naming its type and exits 1; `--debug` prints the traceback instead. An error that
    a task group wrapped alone is reported as itself."""
    _State.debug = False
    args = sys.argv[1:] if argv is None else argv
    leading = next((n for n, arg in enumerate(args) if not arg.startswith("-")), len(args))
    if "--version" in args[:leading] and leading < len(args):
        # click runs the eager --version before it looks at the rest: `dsh --version true` would print the version
        _fail(f"--version takes no value and no command (got {args[leading]!r}); run: dsh --version", 2)
    try:
        try:
            code = app(args=args, prog_name="dsh", standalone_mode=False)
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
    except Exception as error:
        if _State.debug:
            import traceback

            traceback.print_exc()
        if _is_dsh_error(error):
            _fail(str(error), 2)
        _fail(
            f"{type(error).__name__}: {error} (this is a bug in dsh or a plugin; rerun as `dsh --debug ...` for the traceback)",
            1,
        )
