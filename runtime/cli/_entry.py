"""`dsh`'s console-script entry point, kept free of imports: `dsh --version` answers from the package metadata
alone, `dsh --help` from the command table (`_commands`) and `dsh sessions list` from the store (`_sessions_list`)
when their output is plain text, and anything else loads the typer app (`runtime.cli.app`), which loads only the
command that runs."""

from __future__ import annotations

import os
import sys

__all__ = ["main", "version"]

_DIST_INFO = ("dsh-", ".dist-info")


def _metadata_version() -> str | None:
    # importlib.metadata costs more to import than the rest of `dsh --version`: the installed distribution's
    # METADATA is found on sys.path as it would find it (the first `dsh-*.dist-info`), and its Version read.
    for entry in sys.path:
        try:
            names = sorted(os.listdir(entry or "."))
        except OSError:  # a zip or a missing directory on sys.path holds no dist-info of ours
            continue
        for name in names:
            if name.startswith(_DIST_INFO[0]) and name.endswith(_DIST_INFO[1]):
                try:
                    with open(os.path.join(entry or ".", name, "METADATA"), encoding="utf-8") as handle:
                        for line in handle:
                            if line.startswith("Version:"):
                                return line.removeprefix("Version:").strip()
                            if not line.strip():
                                break
                except OSError:  # a dist-info without METADATA: keep looking, as importlib.metadata would
                    continue
    return None


def version() -> str:
    """The installed distribution's version ("unknown" in a source tree that was never installed)."""
    found = _metadata_version()
    if found is not None:
        return found
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("dsh")
    except PackageNotFoundError:
        return "unknown"


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
    """Run `dsh` (see `runtime.cli.app.main`)."""
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
