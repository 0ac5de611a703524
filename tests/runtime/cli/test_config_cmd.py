"""`dsh config check`, run as a user runs it: through the console script's entry function; `use:` looked up before
anything of it runs, a plugin's prints kept off stdout, and a config file that is not a small regular UTF-8 file
refused."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SAMPLES = "tests.runtime.kernel.sample_plugins"


def dsh(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from dsh.runtime.cli import main; main()", *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path(__file__).parents[3]), "COLUMNS": "200"},
    )


def test_check_lists_plugins_in_order(tmp_path: Path) -> None:
    path = tmp_path / "d.yml"
    path.write_text(
        f"plugins:\n  - id: hello\n    use: {SAMPLES}:greeter\n    config: {{greeting: hi}}\n"
        f"  - id: user\n    use: {SAMPLES}\n"
    )
    result = dsh("config", "check", str(path), "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["plugins"] == [
        {"id": "hello", "use": f"{SAMPLES}:greeter", "provides": ["greeter"], "needs": []},
        {"id": "user", "use": SAMPLES, "provides": [], "needs": ["greeter"]},
    ]
    table = dsh("config", "check", str(path))
    assert table.returncode == 0
    assert "2 plugins, loaded in this order" in table.stdout
    assert "greeter-user" not in table.stdout  # ids are shown, not plugin names
    assert "│ 2 │ user" in table.stdout


def test_check_reports_a_bad_file_and_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "d.yml"
    path.write_text(f"plugins:\n  - id: hello\n    use: {SAMPLES}:greeter\n    config: {{greeting: 3}}\n")
    result = dsh("config", "check", str(path))
    assert result.returncode == 2
    assert 'plugin "hello", at `$.config.greeting`: Expected `str`, got `int`' in result.stderr
    assert "Traceback" not in result.stderr


def test_help_works() -> None:
    result = dsh("--help")
    assert result.returncode == 0
    assert "config" in result.stdout


EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def test_the_examples_pass_counting_the_store_the_dsh_command_provides() -> None:
    for example in sorted(EXAMPLES.glob("*.yml")):
        result = dsh("config", "check", str(example), "--json")
        assert result.returncode == 0, result.stderr
        payload = json.loads(result.stdout)
        assert payload["host"] == ["session-store"]
        agent = next(row for row in payload["plugins"] if row["use"] == "agent")
        assert "session-store" in agent["needs"]
    table = dsh("config", "check", str(EXAMPLES / "coding-agent.yml"))
    assert "provided by the dsh command: session-store" in table.stdout


def test_check_reports_every_error_at_once(tmp_path: Path) -> None:
    """Three broken entries: a mistyped config key, an unknown plugin name, an id listed twice; all three are
    reported in one run, in file order, each naming its line and plugin (it once stopped at the first)."""
    path = tmp_path / "d.yml"
    path.write_text(
        f"plugins:\n"
        f"  - id: hello\n    use: {SAMPLES}:greeter\n    config: {{greting: hi}}\n"
        f"  - id: nope\n    use: tool_fss\n"
        f"  - id: hello\n    use: {SAMPLES}:greeter\n"
    )
    result = dsh("config", "check", str(path))
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert lines[0] == "error: 3 errors in the deployment:"
    assert [line.split(": ")[0].strip() for line in lines[1:]] == [
        f'{path}:2, plugin "hello", at `$.config`',
        f'{path}:5, plugin "nope", at `$.use`',
        f'{path}:7, plugin "hello"',
    ]
    assert 'did you mean "tool_fs"' in lines[2]
    assert "listed twice" in lines[3]


def test_check_reports_every_missing_service_at_once(tmp_path: Path) -> None:
    path = tmp_path / "d.yml"
    path.write_text(f"plugins:\n  - id: user\n    use: {SAMPLES}\n  - id: other\n    use: {SAMPLES}\n")
    result = dsh("config", "check", str(path))
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert lines[0] == "error: 2 errors in the deployment:"
    assert ['plugin "user"' in lines[1], 'plugin "other"' in lines[2]] == [True, True]


NOISY = (
    "from dsh.runtime.kernel import Plugin\n"
    "print('NOISE at import')\n"
    "def _apply(ctx, config):\n"
    "    print('NOISE at apply')\n"
    "plugin = Plugin(name='noisy', apply=_apply)\n"
)


def dsh_with(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`dsh` with `path` importable too (a project's own plugin module)."""
    return subprocess.run(
        [sys.executable, "-c", "from dsh.runtime.cli import main; main()", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": f"{path}:{Path(__file__).parents[3]}", "COLUMNS": "200"},
    )


def test_use_this_is_refused_without_running_it(tmp_path: Path) -> None:
    path = tmp_path / "d.yml"
    path.write_text("plugins:\n  - id: zen\n    use: this\n")
    result = dsh("config", "check", str(path))
    assert result.returncode == 2, result.stderr
    assert "Beautiful is better than ugly" not in result.stdout + result.stderr  # `this` never ran
    assert "`use: this` names this" in result.stderr
    assert "defines no `plugin`" in result.stderr


def test_a_plugin_modules_prints_never_reach_stdout(tmp_path: Path) -> None:
    (tmp_path / "noisy_plugin.py").write_text(NOISY)
    path = tmp_path / "d.yml"
    path.write_text("plugins:\n  - id: noisy\n    use: noisy_plugin\n")
    result = dsh_with(tmp_path, "config", "check", str(path), "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["plugins"][0]["id"] == "noisy"  # stdout is the JSON alone
    assert "NOISE at import" in result.stderr


@pytest.mark.parametrize(
    ("use", "says"),
    [
        ("''", "is not a plugin name"),
        (".x", "is not a plugin name"),
        ("sys", "built into Python"),
        ("json.nope", "does not import"),
        ("'x:'", "is not a plugin name"),
    ],
)
def test_odd_use_values_are_config_errors(tmp_path: Path, use: str, says: str) -> None:
    path = tmp_path / "d.yml"
    path.write_text(f"plugins:\n  - id: a\n    use: {use}\n")
    result = dsh("config", "check", str(path))
    assert result.returncode == 2, result.stderr
    assert says in result.stderr
    assert "bug in dsh" not in result.stderr


def test_config_must_be_a_small_regular_utf8_file(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.yml"
    os.mkfifo(fifo)  # nothing ever writes it: reading would wait forever
    big = tmp_path / "big.yml"
    big.write_bytes(b"#" * (2 << 20))
    latin = tmp_path / "latin.yml"
    latin.write_bytes("plugins: []\n# caf\u00e9\n".encode("latin-1"))
    cases = {
        fifo: "is a FIFO",
        Path("/dev/zero"): "is a character device",
        tmp_path: "is a directory",
        big: "larger than 1,048,576 bytes",
        latin: "not UTF-8 text (byte 0xe9",
    }
    for file, says in cases.items():
        for command in (["config", "check", str(file)], ["prompt", "--config", str(file)]):
            result = dsh(*command)
            assert result.returncode == 2, (file, result.stderr)
            assert says in result.stderr, (file, result.stderr)
            assert "bug in dsh" not in result.stderr
    assert "latin.yml:2" in dsh("config", "check", str(latin)).stderr  # the line of the bad byte
