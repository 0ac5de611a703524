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

from dsh.runtime.cli._commands import ENTRY_POINT_GROUP, _entry_points, _highlighted, root_help
from dsh.runtime.cli._sessions_list import from_rows, listed, plain_table, session_rows
from dsh.runtime.cli.app import app
from dsh.runtime.session import (
    SCHEMA_VERSION,
    CountingIds,
    FixedClock,
    SessionId,
    SessionInfo,
    SessionStore,
    SpawnedBy,
    StoredEvent,
    read_listing,
)
from tests.runtime.cli.helpers import plain_env


def _styled_env(width: int) -> dict[str, str]:
    env = plain_env(COLUMNS=str(width), TERMINAL_WIDTH=str(width), FORCE_COLOR="1", TERM="xterm-256color")
    for name in ("NO_COLOR", "_TYPER_FORCE_DISABLE_TERMINAL"):
        env.pop(name)
    return env


def _typer_help(width: int, *, styled: bool = False) -> str:
    code = "from dsh.runtime.cli.app import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
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
        "import sys\nfrom dsh.runtime.cli import main\nmain(['--help'])\n"
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
        (
            "--two-words",
            [("-", "1;36"), ("-two", "1;36"), ("-words", "1;36")],
        ),  # the switch highlighter cuts too
    ],
)
def test_option_names_are_cut_where_rich_cuts_them(text: str, pieces: list[tuple[str, str]]) -> None:
    assert _highlighted(text) == pieces


@pytest.mark.parametrize(
    "text", ["[bold]x[/]", "a <metavar>", "an :emoji: code", "a -x switch", "--trailing-", "--two--dashes"]
)
def test_text_whose_highlighting_is_not_copied_is_left_to_typer(text: str) -> None:
    assert _highlighted(text) is None


def test_dsh_help_answers_from_the_table_when_its_output_is_plain() -> None:
    code = (
        "import sys\nstarted = set(sys.modules)\nfrom dsh.runtime.cli import main\nmain(['--help'])\n"
        "print(sorted(m for m in set(sys.modules) - started if m.split('.')[0] in ('typer', 'click', 'rich',"
        " 'importlib')), file=sys.stderr)"
    )
    ran = subprocess.run(
        [sys.executable, "-c", code], env=plain_env(), capture_output=True, check=True, text=True
    )
    assert ran.stdout == _typer_help(100)
    assert ran.stderr.strip().splitlines()[-1] == "[]"


def test_entry_points_are_the_ones_importlib_metadata_finds() -> None:
    found = [(entry.name, entry.value) for entry in entry_points(group=ENTRY_POINT_GROUP)]
    assert _entry_points(ENTRY_POINT_GROUP) == found
    assert ("replay", "dsh.replay:replay_app") in found


def _rich_table(store: Path, width: int) -> str:
    from rich.console import Console

    from dsh.runtime.cli.sessions_cmd import sessions_table

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


_HEAVY = (
    "typer",
    "click",
    "rich",
    "sqlite_utils",
    "msgspec",
    "typing",
    "typing_extensions",
    "pathlib",
    "uuid",
)
"""What the fast paths never import (the last line a `_dsh` run prints on stderr lists those it did, beyond what the
interpreter had loaded before dsh's entry point: an editable install's import hook loads pathlib at start-up, which a
wheel's install does not)."""


def _dsh(*args: str, typer_only: bool = False, **env: str) -> subprocess.CompletedProcess[str]:
    """`dsh ARGS` in a fresh process (or, `typer_only`, the typer app alone, as it answers without the fast paths);
    the last line of its stderr lists the heavy modules it imported, whatever it exited with."""
    entry = "from dsh.runtime.cli.app import main" if typer_only else "from dsh.runtime.cli import main"
    code = (
        f"import sys\nstarted = set(sys.modules)\n{entry}\ntry:\n    main(sys.argv[1:])\nfinally:\n"
        f"    print(sorted(m for m in set(sys.modules) - started if m.split('.')[0] in {_HEAVY!r}"
        " or m == 'dsh.runtime.session.store.sqlite'), file=sys.stderr)"
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


def _events(count: int, start: int = 0) -> list[StoredEvent]:
    return [
        StoredEvent(type="note", seq=seq, time=1_790_000_000_000 + seq, data="{}")
        for seq in range(start, start + count)
    ]


def _imported_family(db: Path) -> None:
    """Sessions imported from another store's file: a child names its parent by the id it had there
    (`imported_from`); a fork inherits a prefix; a subagent names the call that spawned it."""
    with SessionStore(db, clock=FixedClock(1_790_000_000_000, 60_000), ids=CountingIds("own")) as store:
        parent = store.import_session(
            SessionInfo(
                id=SessionId("p-new"), created_at=1_790_000_000_000, cwd="/work", imported_from="p-old"
            ),
            _events(4),
        )
        store.import_session(
            SessionInfo(
                id=SessionId("fork-new"),
                created_at=1_790_000_060_000,
                parent_id="p-old",
                seed_length=2,
                inherits=True,
            ),
            _events(3, start=2),
        )
        store.import_session(
            SessionInfo(
                id=SessionId("sub-new"),
                created_at=1_790_000_120_000,
                parent_id="p-old",
                delegation_depth=1,
                spawned_by=SpawnedBy(turn=2, step=1, call_id="call-9"),
                header_extra='{"k": 1}',
            ),
            _events(1),
        )
        store.fork(parent.id, 1)
        store.import_session(  # its parent is not in the store
            SessionInfo(
                id=SessionId("orphan"), created_at=1_790_000_180_000, parent_id="gone", cwd="/orphan"
            ),
            [],
        )


def test_the_rows_read_without_msgspec_are_what_the_store_lists(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    _imported_family(db)
    listing = read_listing(str(db))
    assert listing is not None
    with SessionStore(db) as store:
        assert from_rows(listing) == listed(store)
        assert [data["events"] for data in listed(store)] == [
            4,
            5,
            2,
            1,
            0,
        ]  # a fork counts its inherited prefix


def _old_schema(db: Path) -> None:
    import sqlite3

    import sqlite_utils

    from dsh.runtime.session.store.sqlite import _migrate_1

    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    _migrate_1(sqlite_utils.Database(conn))
    conn.execute("INSERT INTO sessions (id, created_at, cwd) VALUES ('old', 1790000000000, '/old')")
    conn.execute("PRAGMA user_version = 1")
    conn.close()


def _not_wal(db: Path) -> None:
    _family(db)
    import sqlite3

    conn = sqlite3.connect(db)
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.close()


def _foreign(db: Path) -> None:
    import sqlite3

    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE notes (body TEXT)")
    conn.close()


_CASES = {
    # name: (how the store is made, what `--store` names (None: the default), whether the fast path answers)
    "family": (_family, "s.db", True),
    "imported": (_imported_family, "s.db", True),
    "empty-store": (lambda db: SessionStore(db).close(), "s.db", True),
    "default-store": (_family, None, True),
    "dsh-store-env": (_family, "$DSH_STORE", True),
    "missing-file": (lambda db: None, "s.db", False),  # typer's path creates it
    "missing-default": (lambda db: None, None, False),  # and the default one's directories
    "empty-file": (
        lambda db: db.write_bytes(b""),
        "s.db",
        False,
    ),  # a new store: typer's path makes its schema
    "no-directory": (lambda db: None, "nowhere/s.db", False),
    "a-directory": (lambda db: db.mkdir(), "s.db", False),
    "text-file": (lambda db: db.write_text("hello\n"), "s.db", False),
    "foreign-sqlite": (_foreign, "s.db", False),
    "older-schema": (_old_schema, "s.db", False),  # typer's path migrates it
    "not-wal": (_not_wal, "s.db", False),  # typer's path switches WAL on
    "postgres-url": (lambda db: None, "postgresql://dsh@127.0.0.1:9/none", False),
}


def _run_case(
    root: Path, case: str, args: list[str], *, typer_only: bool
) -> tuple[int, str, list[str], list[str], str]:
    make, given, _ = _CASES[case]
    if root.exists():
        import shutil

        shutil.rmtree(root)
    root.mkdir()
    data = root / "data"
    store = data / "dsh" / "sessions.db" if given in (None, "$DSH_STORE") else root / given
    if given is not None and "://" not in given:
        store.parent.mkdir(parents=True, exist_ok=True)
    if case != "missing-default":
        store.parent.mkdir(parents=True, exist_ok=True)
    make(store)
    env = {"COLUMNS": "200", "XDG_DATA_HOME": str(data)}
    options = []
    if given == "$DSH_STORE":
        env["DSH_STORE"] = str(store)
    elif given is not None:
        options = ["--store", given if "://" in given else str(store)]
    ran = _dsh(*args, *options, typer_only=typer_only, **env)
    *stderr, modules = ran.stderr.splitlines()
    files = sorted(str(path.relative_to(root)) for path in root.rglob("*"))
    return ran.returncode, ran.stdout, stderr, files, modules


@pytest.mark.parametrize("as_json", [False, True], ids=["table", "json"])
@pytest.mark.parametrize("case", list(_CASES))
def test_the_fast_list_behaves_as_typers_on_every_store(tmp_path: Path, case: str, as_json: bool) -> None:
    """Output, exit status, errors and what is left on disk are typer's; the fast path answers only from a store it
    can read as it is, and leaves creating, migrating, refusing and PostgreSQL to typer's path."""
    args = ["sessions", "list", "--json"] if as_json else ["sessions", "list"]
    fast = _run_case(tmp_path / "run", case, args, typer_only=False)
    slow = _run_case(tmp_path / "run", case, args, typer_only=True)
    assert fast[:4] == slow[:4]
    answered = _CASES[case][2]
    assert (fast[4] == "[]") is answered, fast[4]
    if answered:
        assert fast[0] == 0
        assert fast[1].startswith("[") if as_json else "session" in fast[1]


def test_a_store_of_an_older_schema_is_migrated_by_typers_path_only(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    _old_schema(db)
    assert read_listing(str(db)) is None
    import sqlite3

    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 1  # read_listing changed nothing
    conn.close()
    ran = _dsh("sessions", "list", "--json", "--store", str(db))
    assert ran.returncode == 0, ran.stderr
    assert "msgspec" in ran.stderr.splitlines()[-1]
    assert [data["id"] for data in json.loads(ran.stdout)] == ["old"]
    with SessionStore(db) as store:
        assert store.schema_version() == SCHEMA_VERSION == 3


def test_a_piped_list_is_never_folded_and_the_fast_path_answers_it(tmp_path: Path) -> None:
    """`dsh sessions list | ...` with no COLUMNS: one line per session however long its cwd (it once folded at 80
    columns, and the fold sent the list to rich, 10x slower); typer's path draws the same table."""
    db = tmp_path / "s.db"
    cwd = "/a/rather/long/working/directory/" + "x" * 60
    with SessionStore(db) as store:
        store.create(cwd=cwd)
    env = plain_env()
    env.pop("COLUMNS")
    env.pop("TERMINAL_WIDTH")
    code = "import sys\nfrom {0} import main\nmain(sys.argv[1:])"
    ran = {
        name: subprocess.run(
            [sys.executable, "-c", code.format(entry), "sessions", "list", "--store", str(db)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for name, entry in (("fast", "dsh.runtime.cli"), ("typer", "dsh.runtime.cli.app"))
    }
    assert ran["fast"] == ran["typer"]
    row = next(line for line in ran["fast"].splitlines() if cwd in line)
    assert row.startswith("│ ")
    assert row.endswith(f"│ {cwd} │")
