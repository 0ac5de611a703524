"""The `dsh` command's public name: its entry point. The typer app is `dsh.runtime.cli.app.app`; what other front ends
share with it (the host lifecycle, options, the terminal view, progress bars) lives in `dsh.runtime.host`."""

from ._entry import main as main

__all__ = ["main"]
