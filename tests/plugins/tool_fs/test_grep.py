"""`grep`: matches grouped by file, newest file first, `include`, a single file as path, caps, bad patterns."""

from __future__ import annotations

import os
import re
from pathlib import Path
from unittest import mock

import anyio
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from dsh.plugins.tool_fs import INVALID_PATTERN, UNSUPPORTED_PATTERN, grep

from .harness import Fs, load

pytestmark = pytest.mark.anyio


def tree(fs: Fs) -> None:
    files: dict[str, tuple[str | bytes, int]] = {
        "old.py": ("import os\nprint('TODO later')\n", 100),
        "src/new.py": ("# TODO first\nx = 1\n# todo lower\n# TODO second\n", 300),
        "src/mid.txt": ("TODO in text\n", 200),
        "src/blob.bin": (b"TODO\x00binary", 400),
        ".git/HEAD": ("TODO never\n", 500),
    }
    for relative, (content, mtime) in files.items():
        path = fs.write(relative, content)
        os.utime(path, (mtime, mtime))


async def test_matches_are_grouped_by_file_newest_first(fs: Fs) -> None:
    tree(fs)
    result = await fs.call("grep", pattern="TODO")
    root = fs.root
    assert result.text == "\n".join(
        [
            "Found 4 matches",
            f"{root}/src/new.py:",
            "  Line 1: # TODO first",
            "  Line 4: # TODO second",
            "",
            f"{root}/src/mid.txt:",
            "  Line 1: TODO in text",
            "",
            f"{root}/old.py:",
            "  Line 2: print('TODO later')",
        ]
    )
    assert result.meta == {"matches": 4, "truncated": False}


async def test_include_path_and_regex_syntax(fs: Fs) -> None:
    tree(fs)
    only_py = await fs.call("grep", pattern=r"(?i)\btodo\b", include="*.py")
    assert only_py.meta["matches"] == 4
    assert "mid.txt" not in only_py.text
    one_file = await fs.call("grep", pattern="^# TODO", path="src/new.py")
    assert (
        one_file.text
        == f"Found 2 matches\n{fs.root}/src/new.py:\n  Line 1: # TODO first\n  Line 4: # TODO second"
    )
    below = await fs.call("grep", pattern="TODO", path="src", include="*.txt")
    assert below.text == f"Found 1 matches\n{fs.root}/src/mid.txt:\n  Line 1: TODO in text"
    none = await fs.call("grep", pattern="FIXME")
    assert none.text == "No files found"
    assert none.meta == {"matches": 0, "truncated": False}


async def test_matches_are_capped(workspace: Path) -> None:
    fs = load(workspace, {"grep_max_matches": 3, "grep_max_line_chars": 8})
    os.utime(fs.write("a.txt", "hit 1\nhit 2 is a long line\n"), (2, 2))
    os.utime(fs.write("b.txt", "hit 3\nhit 4\n"), (1, 1))
    result = await fs.call("grep", pattern="hit")
    assert result.text == (
        f"Found 3 matches\n{fs.root}/a.txt:\n  Line 1: hit 1\n  Line 2: hit 2 is...\n\n{fs.root}/b.txt:\n"
        "  Line 1: hit 3\n\n(Results are truncated at 3 matches. Use a more specific pattern, path or include.)"
    )
    assert result.meta == {"matches": 3, "truncated": True}


async def test_a_bad_pattern_is_refused(fs: Fs) -> None:
    result = await fs.call("grep", pattern="(unclosed")
    assert result.code == INVALID_PATTERN
    assert result.text.startswith('grep pattern "(unclosed" is not a valid regular expression: missing )')
    bad_include = await fs.call("grep", pattern="x", include="[z-a]")
    assert bad_include.code == INVALID_PATTERN


async def test_a_catastrophic_backtracking_pattern_returns_at_once(fs: Fs) -> None:
    # `(a+)+$` against 40 `a`s and a `!` takes a backtracking engine ~2^40 steps; RE2 answers in linear time.
    fs.write("bomb.txt", "a" * 40 + "!")
    with anyio.fail_after(5):
        result = await fs.call("grep", pattern=r"(a+)+$")
    assert result.text == "No files found"
    fs.write("hit.txt", "a" * 40)
    assert (await fs.call("grep", pattern=r"(a+)+$")).meta == {"matches": 1, "truncated": False}


@pytest.mark.parametrize("pattern", [r"(\w+) \1", r"foo(?=bar)", r"(?<!x)y", r"(?!a)b"])
async def test_backreferences_and_lookaround_are_refused_as_unsupported(fs: Fs, pattern: str) -> None:
    fs.write("a.txt", "foo foo\nfoobar\n")
    result = await fs.call("grep", pattern=pattern)
    assert result.is_error
    assert result.code == UNSUPPORTED_PATTERN
    assert result.text.startswith(f'grep pattern "{pattern}" is not supported: ')
    assert "backreferences" in result.text
    assert "lookaround" in result.text


async def test_cancelling_a_long_grep_stops_it_within_a_second(fs: Fs) -> None:
    # Enough text that the whole search takes seconds: a pattern anchored with \A skips the block search, so each
    # of the 1.5 million lines is matched on its own (and each would defeat a backtracking engine).
    line = "a" * 30 + "!\n"
    for index in range(30):
        fs.write(f"big/{index:02}.txt", line * 50_000)
    outcome: list[object] = []
    async with anyio.create_task_group() as group:

        async def search() -> None:
            outcome.append(await fs.call("grep", pattern=r"\A(a+)+$"))

        group.start_soon(search)
        await anyio.sleep(0.3)
        cancelled_at = anyio.current_time()
        group.cancel_scope.cancel()
    stopped_in = anyio.current_time() - cancelled_at
    assert outcome == []  # cancelled, not finished
    assert stopped_in < 1.0, f"grep took {stopped_in:.2f}s to stop after cancellation"


ASCII_PATTERNS = [r"\bab", r"\w+$", r"a\s+b", r"\d", r"^\W"]
PATTERNS = [
    "a",
    "^a",
    "a$",
    "^$",
    "b+a",
    "a|b$",
    "(?i)A",
    "[^a]",
    ".",
    "^.*$",
    "a.b",
    "x*",
    "(?s)a.b",
    "a\nb",
    "a[^x]*b",
    "(?m)^b",
    "(?-m:^b)",
    r"\Ab",
    r"a\z",
    "é",
    "^é*$",
    "a{2,}",
    "(a|ab)(c|bcd)?",
]


def reference(data: bytes, pattern: str, limit: int) -> list[tuple[int, str]]:
    """Python's `re` on each line, as grep matched before RE2."""
    lines = data.decode("utf-8", errors="replace").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    regex = re.compile(pattern.replace(r"\z", r"\Z"))  # RE2's end of text is \z, Python 3.11's \Z
    hits = [
        (n, line.removesuffix("\r"))
        for n, line in enumerate(lines, 1)
        if regex.search(line.removesuffix("\r"))
    ]
    return hits[:limit]


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@example(text="a\r\r", pattern="a", block=24, read=24, limit=10**9, invalid=False)  # one \r dropped, not two
@given(
    text=st.text(alphabet="ab \n\rxé", max_size=60) | st.text(alphabet="ab1 \n\t_-", max_size=60),
    pattern=st.sampled_from(PATTERNS + ASCII_PATTERNS),
    block=st.integers(min_value=1, max_value=24),
    read=st.integers(min_value=1, max_value=24),
    limit=st.integers(min_value=1, max_value=8) | st.just(10**9),
    invalid=st.booleans(),
)
def test_grep_matches_lines_as_pythons_re_does(
    tmp_path: Path, text: str, pattern: str, block: int, read: int, limit: int, invalid: bool
) -> None:
    # Small blocks and reads put block and piece edges everywhere; invalid UTF-8 is read as U+FFFD by both.
    if pattern in ASCII_PATTERNS and "é" in text:
        return  # \b, \w, \s, \d and POSIX classes are ASCII-only in RE2, Unicode in Python: documented
    data = text.encode() + (b"\xff" if invalid else b"")
    path = tmp_path / "f.txt"
    path.write_bytes(data)
    with (
        mock.patch.object(grep, "_BLOCK_BYTES", block),
        mock.patch.object(grep, "_READ_BYTES", read),
        path.open("rb") as file,
    ):
        found = grep.search_stream(file, grep.compile_pattern(pattern), lambda: None, limit)
    assert found == grep.Hits(reference(data, pattern, limit), 0)
