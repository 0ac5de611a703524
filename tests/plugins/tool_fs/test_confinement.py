"""Every path is confined to the workspace root: `..`, absolute paths outside it and symlinks pointing out are
refused by every tool; symlinks and absolute paths that stay inside are allowed."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsh.plugins.tool_fs import INVALID_PATH, PATH_OUTSIDE_WORKSPACE, FsError, Workspace

from .harness import Fs, load

pytestmark = pytest.mark.anyio

# One call per tool that would touch `target`.
CALLS: dict[str, Any] = {
    "read": lambda target: {"file_path": target},
    "write": lambda target: {"file_path": target, "content": "pwned"},
    "edit": lambda target: {"file_path": target, "old_string": "secret", "new_string": "pwned"},
    "glob": lambda target: {"pattern": "*", "path": target},
    "grep": lambda target: {"pattern": "secret", "path": target},
}


def real_path(path: Path) -> str:
    return os.path.realpath(path)


def escapes(outside: Path) -> list[str]:
    return [
        "../outside/secret.txt",
        "sub/../../outside/secret.txt",
        str(outside / "secret.txt"),
        "link_out/secret.txt",
        "file_out",
        "/",
    ]


@pytest.fixture
def links(fs: Fs, outside: Path) -> Fs:
    fs.write("sub/inside.txt", "secret inside\n")
    (fs.root / "link_out").symlink_to(outside)
    (fs.root / "file_out").symlink_to(outside / "secret.txt")
    (fs.root / "link_in").symlink_to("sub")
    (fs.root / "file_in").symlink_to("sub/inside.txt")
    return fs


@pytest.mark.parametrize("tool", sorted(CALLS))
async def test_escapes_are_refused_by_every_tool(links: Fs, outside: Path, tool: str) -> None:
    for target in escapes(outside):
        if tool in ("glob",) and target.endswith("secret.txt"):
            target = os.path.dirname(target)  # glob's path is a directory
        result = await links.call(tool, **CALLS[tool](target))
        assert (result.is_error, result.code) == (True, PATH_OUTSIDE_WORKSPACE), (tool, target, result.text)
        assert f"outside the workspace {links.root}" in result.text
    assert (outside / "secret.txt").read_text() == "secret\n"
    assert sorted(os.listdir(outside)) == ["secret.txt"]


async def test_the_refusal_says_where_the_path_led(links: Fs, outside: Path) -> None:
    result = await links.call("read", file_path="link_out/secret.txt")
    assert result.text == (
        f'path "link_out/secret.txt" resolves to {real_path(outside)}/secret.txt, outside the workspace '
        f"{links.root}; only files inside the workspace can be used (relative paths are taken from the "
        "workspace root)"
    )


async def test_writing_through_a_dangling_link_out_is_refused(fs: Fs, outside: Path) -> None:
    (fs.root / "dangling").symlink_to(outside / "new.txt")
    result = await fs.call("write", file_path="dangling", content="x")
    assert result.code == PATH_OUTSIDE_WORKSPACE
    created = await fs.call("write", file_path="link_dir/new.txt", content="x")
    assert not created.is_error  # an ordinary new directory inside
    (fs.root / "link_parent").symlink_to(outside)
    nested = await fs.call("write", file_path="link_parent/deeper/new.txt", content="x")
    assert nested.code == PATH_OUTSIDE_WORKSPACE
    assert sorted(os.listdir(outside)) == ["secret.txt"]


async def test_links_and_absolute_paths_inside_are_allowed(links: Fs) -> None:
    via_dir = await links.call("read", file_path="link_in/inside.txt")
    assert via_dir.meta["lines"] == [{"number": 1, "text": "secret inside"}]
    assert via_dir.meta["path"] == f"{links.root}/sub/inside.txt"  # the file actually read
    via_file = await links.call("edit", file_path="file_in", old_string="inside", new_string="edited")
    assert not via_file.is_error
    assert (links.root / "sub/inside.txt").read_text() == "secret edited\n"
    absolute = await links.call("read", file_path=str(links.root / "sub" / ".." / "sub/inside.txt"))
    assert not absolute.is_error


async def test_searches_do_not_follow_links_out(links: Fs) -> None:
    found = await links.call("glob", pattern="*")
    assert sorted(Path(line).relative_to(links.root).as_posix() for line in found.text.splitlines()) == [
        "file_in",
        "sub/inside.txt",
    ]
    grep = await links.call("grep", pattern="secret")
    assert "secret.txt" not in grep.text
    assert "file_out" not in grep.text
    assert grep.meta["matches"] == 2  # sub/inside.txt and the link file_in to it


async def test_a_configured_root_confines_to_it(workspace: Path) -> None:
    fs = load(workspace, {"root": "project"})
    fs.write("project/in.txt", "in\n")
    fs.write("beside.txt", "beside\n")
    inside = await fs.call("read", file_path="in.txt")
    assert inside.meta["path"] == f"{workspace}/project/in.txt"
    beside = await fs.call("read", file_path="../beside.txt")
    assert beside.code == PATH_OUTSIDE_WORKSPACE


async def test_a_nul_byte_is_refused(fs: Fs) -> None:
    result = await fs.call("read", file_path="a\u0000b")
    assert result.code == INVALID_PATH


# -- the property: whatever relative path is generated, an accepted path never leads outside the root ---------

COMPONENTS = ["..", ".", "", "d", "e", "f.txt", "in_dir", "in_up", "out_dir", "out_up", "out_file", "missing"]


@pytest.fixture(scope="module")
def maze(tmp_path_factory: pytest.TempPathFactory) -> tuple[Workspace, set[tuple[int, int]]]:
    """A workspace whose symlinks lead inside, upward inside, and out; returns it with the identities (device,
    inode) of everything really inside it."""
    base = tmp_path_factory.mktemp("maze")
    root, beyond = base / "root", base / "beyond"
    (root / "d" / "e").mkdir(parents=True)
    beyond.mkdir()
    (root / "f.txt").write_text("f")
    (root / "d" / "f.txt").write_text("f")
    (beyond / "f.txt").write_text("outside")
    (root / "in_dir").symlink_to("d")
    (root / "d" / "in_up").symlink_to("..")  # the root itself
    (root / "d" / "e" / "out_up").symlink_to("../../..")  # the root's parent
    (root / "out_dir").symlink_to(beyond)
    (root / "d" / "out_file").symlink_to(beyond / "f.txt")
    inside = {(root.stat().st_dev, root.stat().st_ino)}
    for directory, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            info = os.lstat(os.path.join(directory, name))
            inside.add((info.st_dev, info.st_ino))
    return Workspace.at(root), inside


@given(parts=st.lists(st.sampled_from(COMPONENTS), max_size=8), absolute=st.booleans())
def test_no_generated_path_resolves_outside(
    maze: tuple[Workspace, set[tuple[int, int]]], parts: list[str], absolute: bool
) -> None:
    workspace, inside = maze
    raw = "/".join(parts)
    if absolute:
        raw = os.path.join(workspace.root, raw)
    opened = os.path.join(workspace.root, raw)  # what `open` would be given
    try:
        identity: tuple[int, int] | None = (os.stat(opened).st_dev, os.stat(opened).st_ino)
    except OSError:
        identity = None  # missing, or a path through a file
    refusal: FsError | None = None
    try:
        real = workspace.resolve(raw)
    except FsError as error:
        refusal = error
    if refusal is not None:
        assert refusal.code == PATH_OUTSIDE_WORKSPACE
        # Refused only when what the OS would open is really not inside.
        assert identity not in inside or identity is None
        return
    assert os.path.commonpath([real, workspace.real_root]) == str(workspace.real_root)
    if identity is not None:
        assert identity in inside, f"{raw!r} was accepted but opens something outside"
