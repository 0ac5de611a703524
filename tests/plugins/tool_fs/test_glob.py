"""`glob`: name patterns at any depth, path patterns, files only, newest first, the cap, and the glob syntax."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dsh.plugins.tool_fs import FILE_NOT_FOUND, INVALID_PATTERN, NOT_A_DIRECTORY, GlobMatcher

from .harness import Fs, load

pytestmark = pytest.mark.anyio


def aged(fs: Fs, files: dict[str, int]) -> None:
    """Write each file with its modification time set to the given second."""
    for relative, mtime in files.items():
        path = fs.write(relative, relative)
        os.utime(path, (mtime, mtime))


async def test_a_name_pattern_matches_at_any_depth_newest_first(fs: Fs) -> None:
    aged(fs, {"a.py": 100, "pkg/b.py": 300, "pkg/deep/c.py": 200, "pkg/notes.md": 400, "pkg/same.py": 200})
    (fs.root / "dir.py").mkdir()  # a directory whose name matches is not listed: files only
    result = await fs.call("glob", pattern="*.py")
    root = fs.root
    assert result.text == "\n".join(
        [f"{root}/pkg/b.py", f"{root}/pkg/deep/c.py", f"{root}/pkg/same.py", f"{root}/a.py"]
    )
    assert result.meta == {"count": 4, "truncated": False}


async def test_a_path_pattern_matches_relative_to_path(fs: Fs) -> None:
    aged(fs, {"src/x.ts": 1, "src/lib/y.tsx": 2, "test/z.ts": 3, "src/lib/w.js": 4})
    result = await fs.call("glob", pattern="src/**/*.{ts,tsx}")
    assert result.text == f"{fs.root}/src/lib/y.tsx\n{fs.root}/src/x.ts"
    below = await fs.call("glob", pattern="lib/*", path="src")
    assert below.text == f"{fs.root}/src/lib/w.js\n{fs.root}/src/lib/y.tsx"


async def test_hidden_files_are_included_and_git_is_skipped(fs: Fs) -> None:
    aged(fs, {".env": 2, ".config/tool.toml": 1, ".git/config": 3})
    result = await fs.call("glob", pattern="**")
    assert result.text == f"{fs.root}/.env\n{fs.root}/.config/tool.toml"


async def test_results_are_capped(workspace: Path) -> None:
    fs = load(workspace, {"glob_max_results": 2})
    aged(fs, {f"f{n}.txt": n for n in range(5)})
    result = await fs.call("glob", pattern="*.txt")
    assert result.text == (
        f"{fs.root}/f4.txt\n{fs.root}/f3.txt\n\n(Results are truncated: showing the 2 newest of 5 files. Use a "
        "more specific path or pattern.)"
    )
    assert result.meta == {"count": 5, "truncated": True}


async def test_no_match_and_bad_arguments(fs: Fs) -> None:
    fs.write("a.txt", "")
    assert (await fs.call("glob", pattern="*.rs")).text == "No files found"
    not_dir = await fs.call("glob", pattern="*", path="a.txt")
    assert (not_dir.code, not_dir.text) == (
        NOT_A_DIRECTORY,
        f"{fs.root}/a.txt is not a directory; give a directory as path",
    )
    missing = await fs.call("glob", pattern="*", path="nowhere")
    assert (missing.code, missing.text) == (FILE_NOT_FOUND, f"Directory not found: {fs.root}/nowhere")
    absolute = await fs.call("glob", pattern="/etc/*")
    assert absolute.code == INVALID_PATTERN
    bad_class = await fs.call("glob", pattern="[z-a]*")
    assert bad_class.code == INVALID_PATTERN


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("*.py", "a/b/c.py", True),
        ("*.py", "a/b/c.pyc", False),
        ("c?.py", "c1.py", True),
        ("src/*.py", "src/a/b.py", False),
        ("src/**/*.py", "src/b.py", True),
        ("src/**/*.py", "src/a/b/c.py", True),
        ("**/test_*.py", "test_x.py", True),
        ("./src/*.py", "src/a.py", True),
        ("*.{js,jsx,ts}", "x/y.jsx", True),
        ("{a,b/{c,d}}.txt", "b/d.txt", True),
        ("{a,b/{c,d}}.txt", "b/e.txt", False),
        ("[!_]*.py", "_private.py", False),
        ("[!_]*.py", "public.py", True),
        ("[[]x].md", "[x].md", True),
        ("{unclosed", "{unclosed", True),
        ("file(1).txt", "file(1).txt", True),
    ],
)
def test_glob_syntax(pattern: str, path: str, expected: bool) -> None:
    assert GlobMatcher.compile(pattern).matches(path) is expected
