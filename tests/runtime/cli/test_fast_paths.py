"""The answers `dsh` gives before typer is imported agree with typer's: the plain root help rendered from the command
table is what the typer app prints for it, at several widths; the entry points read without importlib.metadata are
the ones it finds; and the fast paths import none of the heavy modules."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import entry_points

import pytest

from runtime.cli._commands import ENTRY_POINT_GROUP, _entry_points, plain_root_help
from tests.runtime.cli.helpers import plain_env


def _typer_help(width: int) -> str:
    code = "from runtime.cli.app import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
    env = plain_env(COLUMNS=str(width), TERMINAL_WIDTH=str(width))
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, check=True, text=True).stdout


@pytest.mark.parametrize("width", [60, 80, 100, 137])
def test_the_plain_root_help_is_what_typer_prints(width: int) -> None:
    plain = plain_root_help(width)
    assert plain is not None, f"the root help fits {width} columns"
    assert plain == _typer_help(width)


def test_a_width_that_would_wrap_is_left_to_typer() -> None:
    assert plain_root_help(50) is None


def test_dsh_help_answers_from_the_table_when_its_output_is_plain() -> None:
    code = (
        "import sys\nfrom runtime.cli import main\nmain(['--help'])\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('typer', 'click', 'rich', 'importlib')"
        " and m != 'importlib._bootstrap' and m != 'importlib._bootstrap_external'), file=sys.stderr)"
    )
    ran = subprocess.run([sys.executable, "-c", code], env=plain_env(), capture_output=True, check=True, text=True)
    assert ran.stdout == _typer_help(100)
    assert ran.stderr.strip().splitlines()[-1] == "[]"


def test_entry_points_are_the_ones_importlib_metadata_finds() -> None:
    found = [(entry.name, entry.value) for entry in entry_points(group=ENTRY_POINT_GROUP)]
    assert _entry_points(ENTRY_POINT_GROUP) == found
    assert ("replay", "replay:replay_app") in found
