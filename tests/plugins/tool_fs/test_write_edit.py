"""`write` and `edit`: creation, full replacement, literal replacement and the uniqueness rule with its counts."""

from __future__ import annotations

import pytest

from dsh.plugins.tool_fs import (
    AMBIGUOUS_MATCH,
    BINARY_FILE,
    EMPTY_OLD_STRING,
    FILE_NOT_FOUND,
    NO_CHANGE,
    NO_MATCH,
    NOT_A_DIRECTORY,
    NOT_A_FILE,
)
from dsh.runtime.tools import ToolResult

from .harness import Fs

pytestmark = pytest.mark.anyio


async def test_write_creates_parents_then_replaces_fully(fs: Fs) -> None:
    created = await fs.call("write", file_path="deep/er/new.txt", content="héllo\n")
    path = fs.root / "deep/er/new.txt"
    assert created == ToolResult(
        f"Created {path} (7 bytes)", meta={"path": str(path), "bytes": 7, "created": True}
    )
    assert path.read_text() == "héllo\n"
    replaced = await fs.call("write", file_path=str(path), content="short")
    assert replaced.text == f"Replaced {path} (5 bytes)"
    assert replaced.meta["created"] is False
    assert path.read_text() == "short"


async def test_write_refuses_directories_and_file_parents(fs: Fs) -> None:
    fs.write("dir/x.txt", "x")
    into_dir = await fs.call("write", file_path="dir", content="x")
    assert (into_dir.code, into_dir.text) == (
        NOT_A_FILE,
        f"{fs.root}/dir is a directory; write needs a file path",
    )
    under_file = await fs.call("write", file_path="dir/x.txt/y.txt", content="x")
    assert under_file.code == NOT_A_DIRECTORY
    assert (fs.root / "dir/x.txt").read_text() == "x"


async def test_edit_replaces_a_unique_occurrence(fs: Fs) -> None:
    path = fs.write("code.py", "def f():\n    return 1\n")
    result = await fs.call("edit", file_path="code.py", old_string="return 1", new_string="return 2")
    assert result == ToolResult(
        f"Edited {path}: replaced 1 occurrence.", meta={"path": str(path), "replacements": 1}
    )
    assert path.read_text() == "def f():\n    return 2\n"


async def test_edit_is_literal(fs: Fs) -> None:
    path = fs.write("re.txt", "a.c abc a.c\n")
    result = await fs.call("edit", file_path="re.txt", old_string="a.c", new_string="X", replace_all=True)
    assert result.meta["replacements"] == 2
    assert path.read_text() == "X abc X\n"


async def test_edit_with_zero_matches_says_so_and_changes_nothing(fs: Fs) -> None:
    path = fs.write("f.txt", "alpha\nbeta\n")
    result = await fs.call("edit", file_path="f.txt", old_string="gamma", new_string="delta")
    assert (result.is_error, result.code) == (True, NO_MATCH)
    assert result.text.startswith(
        f"old_string was not found in {path}; read the file and copy the text exactly"
    )
    assert path.read_text() == "alpha\nbeta\n"


async def test_edit_with_two_matches_gives_the_count(fs: Fs) -> None:
    path = fs.write("f.txt", "x = 1\ny = 1\nz = 1\n")
    result = await fs.call("edit", file_path="f.txt", old_string="= 1", new_string="= 2")
    assert result.code == AMBIGUOUS_MATCH
    assert result.text == (
        f"old_string occurs 3 times in {path}; it must occur exactly once. Include more surrounding lines to "
        "make it unique, or set replace_all to true to replace all 3."
    )
    assert path.read_text() == "x = 1\ny = 1\nz = 1\n"
    fs.write("g.txt", "aa aa\n")
    two = await fs.call("edit", file_path="g.txt", old_string="aa", new_string="b", replace_all=False)
    assert "occurs 2 times" in two.text
    everywhere = await fs.call(
        "edit", file_path="f.txt", old_string="= 1", new_string="= 2", replace_all=True
    )
    assert everywhere.text == f"Edited {path}: replaced 3 occurrences."
    assert path.read_text() == "x = 2\ny = 2\nz = 2\n"


async def test_edit_refusals(fs: Fs) -> None:
    fs.write("f.txt", "same\n")
    fs.write("blob.bin", b"\x00\x01same")
    same = await fs.call("edit", file_path="f.txt", old_string="same", new_string="same")
    assert (same.code, same.text) == (
        NO_CHANGE,
        "old_string and new_string are identical; there is nothing to change",
    )
    empty = await fs.call("edit", file_path="f.txt", old_string="", new_string="x")
    assert empty.code == EMPTY_OLD_STRING
    missing = await fs.call("edit", file_path="nope.txt", old_string="a", new_string="b")
    assert missing.code == FILE_NOT_FOUND
    binary = await fs.call("edit", file_path="blob.bin", old_string="same", new_string="other")
    assert binary.code == BINARY_FILE
    assert (fs.root / "blob.bin").read_bytes() == b"\x00\x01same"
    directory = await fs.call("edit", file_path=".", old_string="a", new_string="b")
    assert directory.code == NOT_A_FILE


async def test_edit_points_out_crlf_line_endings(fs: Fs) -> None:
    fs.write("win.txt", "one\r\ntwo\r\n")
    result = await fs.call("edit", file_path="win.txt", old_string="one\ntwo", new_string="x")
    assert result.code == NO_MATCH
    assert "(the file has CRLF line endings; old_string has LF)" in result.text
