"""`dsh`'s console-script entry point, kept free of imports: `dsh --version` answers from the package metadata
alone, `dsh --help` from the command table (`_commands`) and `dsh sessions list` from the store (`_sessions_list`)
when their output is plain text, and anything else loads the typer app (`dsh.runtime.cli.app`), which loads only the
command that runs. First of all, a URL's password on the command line is hidden from other processes (`_argv`)."""

from __future__ import annotations

import sys

from ..about import version
from ._argv import hide_url_passwords

__all__ = ["main", "version"]


def _tolerant_streams() -> None:
    # On a stdout or stderr that cannot encode every character (an ASCII or Latin-1 locale), a character it cannot
    # show is printed as "?" instead of ending the command with UnicodeEncodeError mid-output.
    for stream in (sys.stdout, sys.stderr):
        encoding = (getattr(stream, "encoding", None) or "").lower().replace("-", "")
        if encoding not in ("utf8", "utf8sig") and getattr(stream, "errors", None) == "strict":
            try:
                stream.reconfigure(errors="replace")  # type: ignore[union-attr]
            except (AttributeError, ValueError):  # not a text file of io's, or a closed one
                continue


def main(argv: list[str] | None = None) -> None:
    """Run `dsh` (see `dsh.runtime.cli.app.main`)."""
    hide_url_passwords()
    _tolerant_streams()
    args = sys.argv[1:] if argv is None else argv
    if args == ["--version"]:
        print(f"dsh {version()}")
        return
    if args == ["--help"]:
        from ._commands import root_help

        text = root_help()
        if text is not None:
            sys.stdout.write(text)
            return
    if args[:2] == ["sessions", "list"]:
        from ._sessions_list import run_fast

        if run_fast(args[2:]):
            return
    from .app import main as run_app

    run_app(args)
