"""The file tools cannot be raced out of the workspace: a job flipping a path between a file and a symlink to a file
outside, while the tools read, write and edit it, never gets them to touch the file outside (both with `openat2` and
with the component walk used where the kernel lacks it). And one over-long line costs bounded memory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from dsh.plugins.tool_fs import PATH_OUTSIDE_WORKSPACE, FsError, Workspace, handles

from .harness import Fs

pytestmark = pytest.mark.anyio

ROUNDS = 150


@pytest.fixture(params=["openat2", "walk"])
def opener(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "openat2" and not handles.OPENAT2():
        pytest.skip("this kernel has no openat2")
    monkeypatch.setattr(handles, "_use_openat2", request.param == "openat2")
    return str(request.param)


class Flipper:
    """A thread swapping `race/x` between a regular file and a symlink to `target`, each swap one atomic rename."""

    def __init__(self, directory: Path, target: Path) -> None:
        self.directory, self.target = directory, target
        self.stop = threading.Event()
        self.flips = 0
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        link, file, x = self.directory / ".link", self.directory / ".file", self.directory / "x"
        while not self.stop.is_set():
            link.unlink(missing_ok=True)
            link.symlink_to(self.target)
            os.replace(link, x)
            file.write_text("inside old\n")
            os.replace(file, x)
            self.flips += 1

    def __enter__(self) -> Flipper:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        self.thread.join(timeout=10)


@pytest.fixture
def target(outside: Path) -> Iterator[Path]:
    path = outside / "target"
    path.write_text("TOPSECRET old\n")
    before = os.stat(path)
    yield path
    after = os.stat(path)
    assert path.read_text() == "TOPSECRET old\n"
    assert (after.st_ino, after.st_mtime_ns, after.st_size) == (
        before.st_ino,
        before.st_mtime_ns,
        before.st_size,
    )


async def test_a_symlink_swapped_in_never_carries_a_call_outside(fs: Fs, target: Path, opener: str) -> None:
    race = fs.root / "race"
    race.mkdir()
    (race / "x").write_text("inside old\n")
    refusals = 0
    with Flipper(race, target) as flipper:
        for index in range(ROUNDS):
            results = [
                await fs.call("write", file_path="race/x", content=f"written {index}\n"),
                await fs.call("edit", file_path="race/x", old_string="old", new_string="new"),
                await fs.call("read", file_path="race/x"),
                await fs.call("grep", pattern="TOPSECRET|old|new|written", path="race"),
            ]
            for result in results:
                assert "TOPSECRET" not in result.text, (opener, result.text)
                refusals += result.code == PATH_OUTSIDE_WORKSPACE
    assert flipper.flips > 0
    assert (
        refusals > 0
    )  # the race was really run: some calls met the symlink at open time (others at the check)
    assert sorted(p.name for p in target.parent.iterdir()) == ["secret.txt", "target"]


async def test_a_raced_open_names_the_link_that_appeared(fs: Fs, outside: Path, opener: str) -> None:
    # The race pinned down: the check saw a directory, the open finds a symlink in its place.
    fs.write("d/x", "inside\n")
    real = fs.root / "d" / "x"
    workspace = Workspace.at(fs.root)
    checked = workspace.resolve("d/x")
    os.rename(fs.root / "d", fs.root / "moved")
    (fs.root / "d").symlink_to(outside)
    (outside / "x").write_text("TOPSECRET\n")
    with pytest.raises(FsError) as caught, workspace.open_file(checked):
        pass
    assert caught.value.code == PATH_OUTSIDE_WORKSPACE
    assert str(caught.value).startswith(
        f"{real} changed while it was being opened: {fs.root}/d is now a symbolic"
    )
    with pytest.raises(FsError) as written:
        workspace.replace_file(checked, b"pwned")
    assert written.value.code == PATH_OUTSIDE_WORKSPACE
    assert (outside / "x").read_text() == "TOPSECRET\n"


async def test_a_write_replaces_a_hard_link_instead_of_writing_through_it(fs: Fs, target: Path) -> None:
    os.link(target, fs.root / "linked")
    result = await fs.call("write", file_path="linked", content="mine\n")
    assert not result.is_error, result.text
    assert (fs.root / "linked").read_text() == "mine\n"


async def test_a_write_keeps_the_replaced_files_mode(fs: Fs) -> None:
    path = fs.write("script.sh", "echo old\n")
    path.chmod(0o750)
    assert not (await fs.call("edit", file_path="script.sh", old_string="old", new_string="new")).is_error
    assert (path.stat().st_mode & 0o777, path.read_text()) == (0o750, "echo new\n")
    assert sorted(os.listdir(fs.root)) == ["script.sh"]  # no temporary file left beside it


PEAK = """
import json, sys
from dsh.plugins.tool_fs import Workspace
from dsh.plugins.tool_fs.read import ReadCaps, read_path
from dsh.plugins.tool_fs.grep import GrepLimits, grep_files
workspace = Workspace.at(sys.argv[1])
if sys.argv[2] == "read":
    result = read_path(workspace, "big.txt", 1, 1, ReadCaps(2000, 2000, 51200))
else:
    result = grep_files(workspace, "zzz|a{5}b", None, None, GrepLimits(max_matches=100, max_line_chars=2000,
                        exclude_dirs=()))
# VmHWM is this process's own peak: ru_maxrss would carry the forking pytest worker's peak across exec.
peak = next(line for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(json.dumps({"rss_kib": int(peak.split()[1]), "text": result.text}))
"""


@pytest.mark.parametrize("tool", ["read", "grep"])
def test_one_gigabyte_line_costs_bounded_memory(tmp_path: Path, tool: str) -> None:
    # One line of 1 GiB: 64 KiB of text, then a hole (read back as NUL bytes past the binary sniff), then "aaaaab".
    big = tmp_path / "big.txt"
    with big.open("wb") as file:
        file.write(b"a" * 65536)
        file.truncate(1 << 30)
        file.seek(0, os.SEEK_END)
        file.write(b"aaaaab")
    run = subprocess.run(
        [sys.executable, "-c", PEAK, str(tmp_path), tool],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    answer = json.loads(run.stdout)
    assert answer["rss_kib"] < 200 * 1024, answer["rss_kib"]  # it held 2-3 GB before
    if tool == "read":
        assert "(line truncated to 2000 chars)" in answer["text"]
        assert "(End of file - total 1 lines)" in answer["text"]
    else:
        # The match lies past the kept first MiB of the line: not found, and the result says why.
        assert answer["text"] == (
            "No files found\n\n(1 line was longer than 1048576 bytes; only its first 1048576 bytes were searched.)"
        )
