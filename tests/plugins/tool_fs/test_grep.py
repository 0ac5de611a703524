"""`grep`: matches grouped by file, newest file first, `include`, a single file as path, caps, bad patterns."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from plugins.tool_fs import INVALID_PATTERN, UNSUPPORTED_PATTERN

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
    # Enough text that the whole search takes seconds (each line also defeats a backtracking engine).
    line = "a" * 30 + "!\n"
    for index in range(30):
        fs.write(f"big/{index:02}.txt", line * 50_000)
    outcome: list[object] = []
    async with anyio.create_task_group() as group:

        async def search() -> None:
            outcome.append(await fs.call("grep", pattern=r"(a+)+$"))

        group.start_soon(search)
        await anyio.sleep(0.3)
        cancelled_at = anyio.current_time()
        group.cancel_scope.cancel()
    stopped_in = anyio.current_time() - cancelled_at
    assert outcome == []  # cancelled, not finished
    assert stopped_in < 1.0, f"grep took {stopped_in:.2f}s to stop after cancellation"
