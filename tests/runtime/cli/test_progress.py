"""Progress bars of long commands: the byte bar appears only once the work outlasts its delay and is gone when it
ends; `dsh sessions import` draws it on a terminal's stderr, never on stdout, and draws nothing when stderr is not a
terminal; a missing file is one error line."""

from __future__ import annotations

import functools
import io
import json
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from dsh.runtime.cli import sessions_cmd
from dsh.runtime.cli.app import app
from dsh.runtime.host import ByteProgress, terminal_stderr
from tests.runtime.cli.test_cli_output import dsh

HARNESS = Path(__file__).resolve().parents[3] / "fixtures" / "harness"
runner = CliRunner()


def _terminal() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=True, width=100), out


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_byte_bar_waits_for_its_delay_then_shows_the_bytes_and_goes_away() -> None:
    console, out = _terminal()
    clock = _Clock()
    with ByteProgress(console, "importing big.jsonl", 1000, delay=0.5, clock=clock) as progress:
        progress(100)
        clock.now = 0.4
        progress(400)
        assert not progress.drawn
        assert out.getvalue() == ""  # quick work never flickers a bar
        clock.now = 0.6
        progress(600)
        assert progress.drawn
        progress(1000)
    shown = out.getvalue()
    assert "importing big.jsonl" in shown
    assert "1.0/1.0 kB" in shown  # the last redraw: all bytes read
    assert "0.4/1.0 kB" not in shown  # drawn from the first call past the delay (0.6 kB), not before
    assert shown.endswith("\x1b[1A\x1b[2K")  # transient: the bar's line is erased when the work ends


def test_work_that_ends_within_the_delay_draws_nothing() -> None:
    console, out = _terminal()
    with ByteProgress(console, "importing small.jsonl", 10, delay=0.5, clock=_Clock()) as progress:
        for read in range(1, 11):
            progress(read)
    assert not progress.drawn
    assert out.getvalue() == ""


def test_terminal_stderr_is_none_when_stderr_is_not_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    assert terminal_stderr() is None


def test_sessions_import_draws_the_bar_on_a_terminals_stderr_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    console, out = _terminal()
    monkeypatch.setattr(sessions_cmd, "terminal_stderr", lambda: console)
    monkeypatch.setattr(sessions_cmd, "ByteProgress", functools.partial(ByteProgress, delay=0.0))
    path = HARNESS / "compaction-recovery" / "session.jsonl"
    result = runner.invoke(
        app, ["sessions", "import", str(path), "--store", str(tmp_path / "s.db"), "--json"]
    )
    assert result.exit_code == 0, result.output
    assert list(json.loads(result.stdout)) == ["id"]  # stdout is the data alone
    assert "importing session.jsonl" in out.getvalue()


def test_sessions_import_draws_nothing_when_stderr_is_not_a_terminal(tmp_path: Path) -> None:
    path = HARNESS / "compaction-recovery" / "session.jsonl"
    result = runner.invoke(app, ["sessions", "import", str(path), "--store", str(tmp_path / "s.db")])
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    assert result.stdout.startswith(f"imported {path} as session ")


@pytest.mark.parametrize("what", ["missing.jsonl", "."])
def test_importing_a_missing_file_or_a_directory_is_one_line(tmp_path: Path, what: str) -> None:
    ran = dsh("sessions", "import", what, "--store", "s.db", cwd=tmp_path)
    assert ran.exit == 2
    assert ran.stdout == ""
    kind = "no such file" if what != "." else "a directory"
    assert ran.stderr == f"error: {what}: {kind}; expected a JSONL session log (format version 0)\n"
