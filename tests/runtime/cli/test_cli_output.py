"""What `dsh` prints at the top level: goldens of the help a user reads and of the one-line errors for a bad
deployment and an unknown session; every command's help has an example; --version; usage errors; and an unexpected
exception is one line unless --debug asks for the traceback."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
import typer
from syrupy.assertion import SnapshotAssertion

from dsh.runtime.cli import main
from dsh.runtime.cli.app import add_entry_point_commands, app, loaded_command
from dsh.runtime.kernel import ConfigError
from tests.runtime.cli.helpers import DSH, deployment, plain_env


@dataclass(frozen=True)
class Ran:
    exit: int
    stdout: str
    stderr: str


def dsh(*args: str, cwd: Path) -> Ran:
    async def go() -> Ran:
        result = await anyio.run_process([*DSH, *args], cwd=cwd, env=plain_env(), check=False)
        return Ran(result.returncode, result.stdout.decode(), result.stderr.decode())

    return anyio.run(go)


def test_dsh_help(tmp_path: Path, snapshot: SnapshotAssertion) -> None:
    assert dsh("--help", cwd=tmp_path) == snapshot


def test_dsh_run_help(tmp_path: Path, snapshot: SnapshotAssertion) -> None:
    assert dsh("run", "--help", cwd=tmp_path) == snapshot


def test_a_bad_deployment_is_one_line(tmp_path: Path, snapshot: SnapshotAssertion) -> None:
    (tmp_path / "bad.yml").write_text(
        "plugins:\n  - id: llm\n    use: dsh.runtime.llm\n    config: {retries: 3}\n"
    )
    ran = dsh("run", "hello", "--config", "bad.yml", "--store", "s.db", cwd=tmp_path)
    assert ran == snapshot
    assert ran.stderr.count("\n") == 1


def test_an_unknown_session_is_one_line(tmp_path: Path, snapshot: SnapshotAssertion) -> None:
    (tmp_path / "deployment.yml").write_text(deployment("http://127.0.0.1:9/v1"))
    ran = dsh(
        "run",
        "hello",
        "--session",
        "no-such-id",
        "--config",
        "deployment.yml",
        "--store",
        "s.db",
        cwd=tmp_path,
    )
    assert ran == snapshot
    assert ran.stderr.count("\n") == 1


def _commands(command: Any, path: str) -> list[tuple[str, Any]]:
    """Every command under `command` (typer's vendored click: a group has `commands`)."""
    found = [(path, command)]
    for name, sub in getattr(command, "commands", {}).items():
        found += _commands(sub, f"{path} {name}")
    return found


def test_every_command_help_has_an_example() -> None:
    add_entry_point_commands()
    root = typer.main.get_command(app)
    commands = [("dsh", root)]
    for name in root.list_commands(typer.Context(root)):  # type: ignore[attr-defined]  # a group lists its names
        commands += _commands(loaded_command(name), f"dsh {name}")
    assert {"dsh run", "dsh chat", "dsh acp", "dsh sessions show"} <= {path for path, _ in commands}
    missing = [path for path, command in commands if "Example: dsh " not in (command.help or "")]
    assert missing == []


def _exit(argv: list[str]) -> int:
    """`dsh argv` in this process: its exit status."""
    try:
        main(argv)
    except SystemExit as done:
        return int(done.code or 0)
    return 0


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert _exit(["--version"]) == 0
    assert capsys.readouterr().out.startswith("dsh ")


def test_a_usage_error_shows_the_usage_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert _exit(["run"]) == 2
    err = capsys.readouterr().err
    assert "Usage: dsh run" in err
    assert "Missing argument" in err
    assert "Traceback" not in err


def test_an_unexpected_error_is_one_line_unless_debug(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    async def broken(*args: object, **kwargs: object) -> int:
        raise RuntimeError("boom")

    monkeypatch.setattr("dsh.runtime.cli.run_cmd._run", broken)
    assert _exit(["run", "hi"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: RuntimeError: boom (this is a bug in dsh or a plugin;")
    assert err.count("\n") == 1
    assert _exit(["--debug", "run", "hi"]) == 1
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err
    assert 'raise RuntimeError("boom")' in err


def test_an_error_a_task_group_wrapped_alone_is_reported_as_itself(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    async def broken(*args: object, **kwargs: object) -> int:
        raise ExceptionGroup("unhandled errors in a TaskGroup", [ConfigError("the deployment is wrong")])

    monkeypatch.setattr("dsh.runtime.cli.run_cmd._run", broken)
    assert _exit(["run", "hi"]) == 2
    assert capsys.readouterr().err == "error: the deployment is wrong\n"


def test_each_core_command_is_listed_with_its_own_summary() -> None:
    from dsh.runtime.cli.app import CORE_COMMANDS, loaded_command

    for name, lazy in CORE_COMMANDS.items():
        command = loaded_command(name)
        assert command is not None
        assert command.get_short_help_str(limit=200) == lazy.summary, name


def test_help_and_version_import_no_command() -> None:
    code = (
        "import sys\nfrom dsh.runtime.cli.app import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "heavy = sorted(m for m in sys.modules if m.startswith(('dsh.runtime.agent', 'dsh.runtime.session', 'acp', "
        "'plugins', 'replay', 'dsh.runtime.cli.')) and m not in ('dsh.runtime.cli._entry', 'dsh.runtime.cli._argv', 'dsh.runtime.cli._commands', 'dsh.runtime.cli.app'))\n"
        "print(heavy)"
    )
    result = anyio.run(lambda: anyio.run_process([sys.executable, "-c", code], env=plain_env(), check=True))
    assert result.stdout.decode().strip().splitlines()[-1] == "[]"


def test_a_mistyped_command_is_answered_with_the_nearest(capsys: pytest.CaptureFixture[str]) -> None:
    assert _exit(["sesions", "list"]) == 2
    assert "No such command 'sesions'. Did you mean 'sessions'?" in capsys.readouterr().err


def _ran(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*DSH, *args], capture_output=True, text=True, env=plain_env(**env), check=False)


def test_version_takes_no_value() -> None:
    """click runs the eager --version before it reads the rest: `dsh --version true` printed the version."""
    refused = _ran("--version", "true")
    assert (refused.returncode, refused.stdout) == (2, "")
    assert (
        refused.stderr.strip()
        == "error: --version takes no value and no command (got 'true'); run: dsh --version"
    )
    assert _ran("--debug", "--version").stdout.startswith("dsh ")


def test_a_flag_shows_no_bool_metavar() -> None:
    for args in (["--help"], ["run", "--help"], ["replay", "run", "--help"], ["sessions", "list", "--help"]):
        shown = _ran(*args)
        assert shown.returncode == 0, shown.stderr
        assert "<bool>" not in shown.stdout, args
        assert "--help" in shown.stdout


def test_shell_completion_completes_commands_loaded_lazily() -> None:
    """`dsh --install-completion` installs what `--show-completion` prints; the script asks dsh, which completes
    the commands (core and entry points alike) and their subcommands."""
    # the shell named, not found in the process tree (pytest runs under no shell): typer then takes a value
    shown = _ran("--show-completion", "bash", _TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION="1")
    assert shown.returncode == 0, shown.stderr
    assert "_dsh_completion()" in shown.stdout
    for words, cword, expected in (
        ("dsh ses", "1", "sessions"),
        ("dsh sessions l", "2", "list"),
        ("dsh rep", "1", "replay"),
    ):
        completed = _ran(_DSH_COMPLETE="complete_bash", COMP_WORDS=words, COMP_CWORD=cword)
        assert completed.stdout.split() == [expected], completed.stderr
