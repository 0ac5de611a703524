"""Import's limits on what one line may hold: a line past the size limit is refused by number before it is read
whole (a 300 MB line in bounded memory), and deep nesting, invalid UTF-8 and integers outside 64 bits are each one
`error:` line naming the file and line, exit 2, through `dsh sessions import`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from dsh.runtime.jsonlines import JsonLimits
from dsh.runtime.session import LogFormatError, SessionStore, import_jsonl
from tests.runtime.cli.helpers import DSH, plain_env

from .conftest import snapshot_rows


@pytest.fixture
def store(sqlite_store: SessionStore) -> SessionStore:
    """The SQLite store: the limits are the reader's, the same for every backend."""
    return sqlite_store


HEADER = b'{"type":"session","version":0,"id":"x","createdAt":5,"delegationDepth":0}'
START = b'{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}'


def _import(tmp_path: Path, path: Path) -> subprocess.CompletedProcess[str]:
    command = [*DSH, "sessions", "import", "--store", str(tmp_path / "s.db"), str(path)]
    return subprocess.run(command, capture_output=True, text=True, env=plain_env(), timeout=120, check=False)


HOSTILE = {
    "deep data": (START[:-2] + b',"x":' + b"[" * 3000 + b"]" * 3000 + b"}}", 2, "line.depth"),
    "deep header": (
        b'{"type":"session","version":0,"x":' + b"{}" * 1 + b"[" * 500 + b"]" * 500 + b"}",
        1,
        "line.depth",
    ),
    "invalid UTF-8 in data": (START[:-2] + b',"x":"caf\xe9"}}', 2, "line.utf8"),
    "invalid UTF-8 in an unknown field": (START[:-1] + b',"note":"\xff"}', 2, "line.utf8"),
    "a time of 2^64": (START.replace(b'"time":1', b'"time":18446744073709551616'), 2, "line.int-range"),
    "a seq of 2^63": (START.replace(b'"seq":0', b'"seq":9223372036854775808'), 2, "line.int-range"),
    "an int in data": (START[:-2] + b',"n":-99999999999999999999}}', 2, "line.int-range"),
    "an int of 5000 digits in an unknown field": (
        START[:-1] + b',"n":' + b"7" * 5000 + b"}",
        2,
        "line.int-range",
    ),
    "createdAt of 2^63": (
        HEADER.replace(b'"createdAt":5', b'"createdAt":9223372036854775808'),
        1,
        "line.int-range",
    ),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_lines_are_one_error_line_with_file_and_line_and_exit_2(tmp_path: Path, case: str) -> None:
    line, number, rule = HOSTILE[case]
    lines = [line, START] if number == 1 else [HEADER, line]
    path = tmp_path / "log.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    done = _import(tmp_path, path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"error: {path}:{number}: ")
    assert done.stderr.rstrip().endswith(f"[{rule}]")
    assert len(done.stderr.strip().splitlines()) == 1
    assert "bug in dsh" not in done.stderr


def test_the_line_limit_is_configurable_and_names_the_line(store: SessionStore, tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(
        b"\n".join(
            [
                HEADER,
                START,
                b'{"type":"step/start","seq":1,"time":1,"data":{"turn":1,"step":1,"pad":"'
                + b"p" * 500
                + b'"}}',
            ]
        )
        + b"\n"
    )
    before = snapshot_rows(store)
    with pytest.raises(LogFormatError) as raised:
        import_jsonl(store, path, limits=JsonLimits(max_line=200))
    assert (raised.value.line, raised.value.rule) == (3, "line.too-long")
    assert (
        str(raised.value)
        == f"{path}:3: the line is longer than 200 bytes (the limit on one line) [line.too-long]"
    )
    assert snapshot_rows(store) == before
    assert import_jsonl(store, path, limits=JsonLimits(max_line=1000)).imported_from == "x"


# Writes a header and a second line of argv[3] MiB (1 MiB at a time), then imports it through `dsh sessions import`
# in this same process and prints the exit status and the process's peak memory (ru_maxrss, KiB on Linux).
_HUGE = """
import resource, sys
path, store, mib = sys.argv[1], sys.argv[2], int(sys.argv[3])
with open(path, "wb") as out:
    out.write(b'{"type":"session","version":0,"id":"x","createdAt":5,"delegationDepth":0}\\n')
    out.write(b'{"type":"turn/start","seq":0,"time":1,"data":{"turn":1,"pad":"')
    block = b"a" * (1 << 20)
    for _ in range(mib):
        out.write(block)
    out.write(b'"}}\\n')
from dsh.runtime.cli import main
try:
    main(["sessions", "import", "--store", store, path])
    code = 0
except SystemExit as done:
    code = done.code
print(code, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.__stdout__)
"""


def _import_huge(tmp_path: Path, mib: int) -> int:
    """Import a log whose second line is `mib` MiB; returns the importing process's peak memory (KiB)."""
    path = tmp_path / f"huge-{mib}.jsonl"
    done = subprocess.run(
        [sys.executable, "-c", _HUGE, str(path), str(tmp_path / f"s-{mib}.db"), str(mib)],
        capture_output=True,
        text=True,
        env=plain_env(),
        timeout=120,
        check=False,
    )
    path.unlink(missing_ok=True)
    code, peak_kib = (int(word) for word in done.stdout.split())
    assert code == 2, done.stderr
    assert done.stderr.startswith(f"error: {path}:2: the line is longer than 52428800 bytes")
    return peak_kib


def test_a_300_mb_line_is_refused_in_bounded_memory(tmp_path: Path) -> None:
    """Refused with the process under 1 GB; and what the refusal holds does not grow with the line: a 300 MiB line
    costs what a 60 MiB one (just past the 50 MiB limit) does, where holding it whole would add 240 MiB."""
    peak_300 = _import_huge(tmp_path, 300)
    peak_60 = _import_huge(tmp_path, 60)
    assert peak_300 < 1024 * 1024, f"peak memory {peak_300} KiB"
    assert peak_300 - peak_60 < 120 * 1024, f"peak memory {peak_300} KiB against {peak_60} KiB for 60 MiB"


def test_dsh_sessions_import_takes_the_line_limit(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(b"\n".join([HEADER, START]) + b"\n")
    command = [
        *DSH,
        "sessions",
        "import",
        "--store",
        str(tmp_path / "s.db"),
        "--max-line-bytes",
        "60",
        str(path),
    ]
    done = subprocess.run(command, capture_output=True, text=True, env=plain_env(), timeout=120, check=False)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == (
        f"error: {path}:1: the line is longer than 60 bytes (the limit on one line) [line.too-long]"
    )
    assert _import(tmp_path, path).returncode == 0
