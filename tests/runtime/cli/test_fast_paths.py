"""The answers `dsh` gives before typer is imported agree with typer's: the plain root help rendered from the command
table is what the typer app prints for it, at several widths; the entry points read without importlib.metadata are
the ones it finds; the plain sessions table is what rich draws; the fast paths import none of the heavy modules, and
what they cannot answer goes to typer."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from typer.testing import CliRunner

from runtime.cli._commands import ENTRY_POINT_GROUP, _entry_points, _highlighted, root_help
from runtime.cli._sessions_list import plain_table, session_rows
from runtime.cli.app import app
from runtime.session import CountingIds, FixedClock, SessionStore, SpawnedBy
from tests.runtime.cli.helpers import plain_env


def _styled_env(width: int) -> dict[str, str]:
    env = plain_env(COLUMNS=str(width), TERMINAL_WIDTH=str(width), FORCE_COLOR="1", TERM="xterm-256color")
    for name in ("NO_COLOR", "_TYPER_FORCE_DISABLE_TERMINAL"):
        env.pop(name)
    return env


def _typer_help(width: int, *, styled: bool = False) -> str:
    code = "from runtime.cli.app import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
    env = _styled_env(width) if styled else plain_env(COLUMNS=str(width), TERMINAL_WIDTH=str(width))
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, check=True, text=True
    ).stdout


@pytest.mark.parametrize("styled", [False, True], ids=["plain", "styled"])
@pytest.mark.parametrize("width", [60, 80, 100, 137])
def test_the_root_help_is_what_typer_prints(width: int, styled: bool) -> None:
    drawn = root_help(width, styled=styled)
    assert drawn is not None, f"the root help fits {width} columns"
    assert drawn == _typer_help(width, styled=styled)


def test_a_width_that_would_wrap_is_left_to_typer() -> None:
    assert root_help(50, styled=False) is None


def test_a_forced_terminal_gets_the_styled_help_without_typer() -> None:
    code = (
        "import sys\nfrom runtime.cli import main\nmain(['--help'])\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('typer', 'click', 'rich')), file=sys.stderr)"
    )
    ran = subprocess.run(
        [sys.executable, "-c", code], env=_styled_env(100), capture_output=True, check=True, text=True
    )
    assert ran.stdout == _typer_help(100, styled=True)
    assert "\x1b[1;36m" in ran.stdout
    assert ran.stderr.strip().splitlines()[-1] == "[]"


@pytest.mark.parametrize(
    ("text", "pieces"),
    [
        (
            "see `dsh acp --help` here",
            [("see `dsh acp ", ""), ("-", "1;36"), ("-help", "1;36"), ("` here", "")],
        ),
        ("an event-sourced --x", [("an event-sourced ", ""), ("-", "1;36"), ("-x", "1;36")]),
        ("a dash - alone", [("a dash - alone", "")]),
    ],
)
def test_option_names_are_cut_where_rich_cuts_them(text: str, pieces: list[tuple[str, str]]) -> None:
    assert _highlighted(text) == pieces


@pytest.mark.parametrize(
    "text", ["[bold]x[/]", "a <metavar>", "an :emoji: code", "a -x switch", "--two-words"]
)
def test_text_whose_highlighting_is_not_copied_is_left_to_typer(text: str) -> None:
    assert _highlighted(text) is None


def test_dsh_help_answers_from_the_table_when_its_output_is_plain() -> None:
    code = (
        "import sys\nfrom runtime.cli import main\nmain(['--help'])\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('typer', 'click', 'rich', 'importlib')"
        " and m != 'importlib._bootstrap' and m != 'importlib._bootstrap_external'), file=sys.stderr)"
    )
    ran = subprocess.run(
        [sys.executable, "-c", code], env=plain_env(), capture_output=True, check=True, text=True
    )
    assert ran.stdout == _typer_help(100)
    assert ran.stderr.strip().splitlines()[-1] == "[]"


def test_entry_points_are_the_ones_importlib_metadata_finds() -> None:
    found = [(entry.name, entry.value) for entry in entry_points(group=ENTRY_POINT_GROUP)]
    assert _entry_points(ENTRY_POINT_GROUP) == found
    assert ("replay", "replay:replay_app") in found


def _rich_table(store: Path, width: int) -> str:
    from rich.console import Console

    from runtime.cli.sessions_cmd import sessions_table

    console = Console(width=width, file=io.StringIO(), color_system=None, force_terminal=False)
    with SessionStore(store) as opened:
        console.print(sessions_table(opened))
    file = console.file
    assert isinstance(file, io.StringIO)
    return file.getvalue()


def _family(db: Path) -> None:
    with SessionStore(db, clock=FixedClock(1_790_000_000_000, 60_000), ids=CountingIds("tree")) as store:
        parent = store.create(cwd="/work/project")
        store.fork(parent.id)
        spawned = store.create(
            parent_id=parent.id, delegation_depth=1, spawned_by=SpawnedBy(turn=1, step=1, call_id="c1")
        )
        store.create(parent_id=spawned.id, delegation_depth=2)
        store.create(cwd="/elsewhere")


@pytest.mark.parametrize("family", [False, True], ids=["empty", "family"])
@pytest.mark.parametrize("width", [80, 100, 200])
def test_the_plain_sessions_table_is_what_rich_draws(tmp_path: Path, family: bool, width: int) -> None:
    db = tmp_path / "s.db"
    if family:
        _family(db)
    with SessionStore(db) as opened:
        plain = plain_table(*session_rows(opened), width)
    if plain is None:
        assert family, "an empty table always fits"
        assert width < 100, "only a table wider than the console is left to rich"
    else:
        assert plain == _rich_table(db, width)


@pytest.mark.parametrize("cwd", ["/a/[bold]b", "/a:smile:", "/日本"])
def test_a_cell_rich_might_not_print_as_it_is_is_left_to_rich(tmp_path: Path, cwd: str) -> None:
    db = tmp_path / "s.db"
    with SessionStore(db) as store:
        store.create(cwd=cwd)
        assert plain_table(*session_rows(store), 200) is None


def _dsh(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    code = (
        "import sys\nfrom runtime.cli import main\nmain(sys.argv[1:])\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('typer', 'click', 'rich', 'sqlite_utils')),"
        " file=sys.stderr)"
    )
    return subprocess.run(
        [sys.executable, "-c", code, *args], env=plain_env(**env), capture_output=True, check=False, text=True
    )


@pytest.mark.parametrize("as_json", [False, True], ids=["table", "json"])
def test_dsh_sessions_list_answers_without_typer_rich_or_sqlite_utils(tmp_path: Path, as_json: bool) -> None:
    db = tmp_path / "s.db"
    _family(db)
    args = ["sessions", "list", "--json"] if as_json else ["sessions", "list"]
    fast = _dsh(*args, f"--store={db}", COLUMNS="200")
    assert fast.returncode == 0, fast.stderr
    assert fast.stderr.strip().splitlines()[-1] == "[]"
    with_typer = CliRunner().invoke(
        app, [*args, "--store", str(db)], env={"COLUMNS": "200"}, catch_exceptions=False
    )
    assert fast.stdout == with_typer.output


def test_the_fast_list_reads_dsh_store_as_typer_does(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    _family(db)
    from_env = _dsh("sessions", "list", "--json", DSH_STORE=str(db))
    assert from_env.stderr.strip().splitlines()[-1] == "[]"
    assert len(json.loads(from_env.stdout)) == 5
    given = _dsh("sessions", "list", "--json", "--store", str(db), DSH_STORE=str(tmp_path / "other.db"))
    assert given.stdout == from_env.stdout


def test_what_the_fast_list_cannot_answer_goes_to_typer(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    _family(db)
    narrow = _dsh("sessions", "list", "--store", str(db), COLUMNS="60")  # the table folds: rich draws it
    assert narrow.returncode == 0
    assert "rich" in narrow.stderr.strip().splitlines()[-1]
    missing = _dsh("sessions", "list", "--store", str(tmp_path / "no" / "s.db"))  # typer's path reports it
    assert missing.returncode == 2
    assert "error: --store" in missing.stderr
    assert "does not exist" in missing.stderr
    helped = _dsh("sessions", "list", "--help")
    assert helped.returncode == 0
    assert "--json" in helped.stdout


def test_an_output_that_is_not_utf8_is_left_to_rich_and_its_ascii_boxes(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    SessionStore(db).close()  # empty: a child's tree mark has no ASCII form, on either path
    for args in (["--help"], ["sessions", "list", "--store", str(db)]):
        ran = _dsh(*args, PYTHONIOENCODING="ascii", COLUMNS="200")
        assert ran.returncode == 0, ran.stderr
        assert "rich" in ran.stderr.strip().splitlines()[-1]
        assert "+-" in ran.stdout
