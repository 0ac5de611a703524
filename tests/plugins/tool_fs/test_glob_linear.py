"""Globs match in bounded time: the patterns that made Python's `re` backtrack for ever (`*a*a*...*b`, `**/` twelve
times, stacked braces) return at once, ordinary patterns match exactly as the old translation did, and a long walk
stops as soon as it is cancelled."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.plugins.tool_fs import GlobMatcher, Workspace
from dsh.plugins.tool_fs.find import glob_files
from dsh.plugins.tool_fs.globs import linear_only, translate

from .harness import Fs

pytestmark = pytest.mark.anyio

BOMBS = """
import sys
from dsh.plugins.tool_fs import GlobMatcher, Workspace
from dsh.plugins.tool_fs.find import glob_files
from dsh.plugins.tool_fs.grep import GrepLimits, grep_files
stars = GlobMatcher.compile("*a" * 14 + "*b")
assert not stars.matches("a" * 60)
assert GlobMatcher.compile("{a,aa}" * 30 + "b").matches("a" * 40) is False
workspace = Workspace.at(sys.argv[1])
deep = glob_files(workspace, "**/" * 12 + "*.txt", None, 100, ())
assert deep.meta["count"] == 0, deep.text
grep = grep_files(workspace, "x", None, "**/" * 12 + "*.txt",
                  GrepLimits(max_matches=100, max_line_chars=100, exclude_dirs=()))
assert grep.text == "No files found", grep.text
print("returned")
"""


def test_the_glob_bombs_return(tmp_path: Path) -> None:
    # A deep tree (every directory holding a file) against twelve `**/`: with `re` this never returned. Run in a
    # subprocess so a regression fails on the timeout instead of hanging the suite.
    directory = tmp_path
    for depth in range(40):
        directory = directory / f"d{depth}"
        directory.mkdir()
        (directory / f"f{depth}.md").write_text("x\n")
    run = subprocess.run(
        [sys.executable, "-c", BOMBS, str(tmp_path)], capture_output=True, text=True, timeout=120, check=False
    )
    assert (run.returncode, run.stdout, run.stderr) == (0, "returned\n", "")


TOKENS = ["a", "b", ".", "/", "*", "**", "**/", "?", "[ab]", "[!a]", "{a,b}", "{a,.b}", "{,a}"]


@settings(max_examples=400)
@given(
    tokens=st.lists(st.sampled_from(TOKENS), min_size=1, max_size=7),
    subject=st.text(alphabet="ab./", min_size=1, max_size=14),
)
def test_every_pattern_matches_as_the_old_translation(tokens: list[str], subject: str) -> None:
    # Short patterns and subjects, so the old way (Python's `re` on every pattern) still finishes: whichever engine a
    # pattern gets now, it gives the old answer.
    pattern = "".join(tokens)
    if pattern.startswith("/"):
        return
    body = pattern.removeprefix("./")
    old = re.compile(translate(body), re.DOTALL)
    matcher = GlobMatcher.compile(pattern)
    name = subject.rsplit("/", 1)[-1] if "/" not in body else subject
    assert matcher.matches(subject) == (old.fullmatch(name) is not None), (
        pattern,
        subject,
        linear_only(body),
    )


@pytest.mark.parametrize(
    ("pattern", "engine"),
    [
        ("*.py", "re"),
        ("**/*.py", "re"),
        ("src/**/*.{ts,tsx}", "re"),
        ("*/*", "re"),
        ("*a*b", "re2"),
        ("**/x/**/y", "re2"),
        ("*.min.*", "re"),
        ("**a**", "re"),
        ("**a*b", "re2"),
        ("***/x", "re2"),
        ("{a,b}" * 5, "re2"),
    ],
)
def test_only_bounded_shapes_go_to_pythons_re(pattern: str, engine: str) -> None:
    assert ("re2" if linear_only(pattern) else "re") == engine


def test_a_walk_stops_at_the_first_check_that_raises(workspace: Path) -> None:
    for index in range(50):
        (workspace / f"d{index}").mkdir()
        (workspace / f"d{index}" / "f.txt").write_text("x")
    checks = 0

    class Cancelled(Exception):
        pass

    def check() -> None:
        nonlocal checks
        checks += 1
        if checks == 10:
            raise Cancelled

    with pytest.raises(Cancelled):
        glob_files(Workspace.at(workspace), "*.txt", None, 100, (), check_cancelled=check)
    assert checks == 10


async def test_the_glob_tool_is_cancellable(fs: Fs, monkeypatch: pytest.MonkeyPatch) -> None:
    # The tool hands the walk anyio's check, so a cancelled call stops its worker thread instead of finishing.
    seen: list[object] = []
    module = importlib.import_module("dsh.plugins.tool_fs.plugin")
    real = glob_files

    def spy(*args: object, **kwargs: object) -> object:
        seen.append(kwargs.get("check_cancelled"))
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(module, "glob_files", spy)
    fs.write("a.txt", "a")
    assert (await fs.call("glob", pattern="*.txt")).meta["count"] == 1
    assert seen == [anyio.from_thread.check_cancelled]
