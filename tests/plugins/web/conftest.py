"""`dsh web` as a user runs it: a real server process over a store the test fills, and Debian's chromium driven by
Playwright (its own browser download is never used)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]
HARNESS = ROOT / "fixtures" / "harness"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
START_S = 30.0
"""The longest a server may take to print its address."""


@dataclass
class Served:
    """A running `dsh web`: the address it printed (with the token), its base and the token."""

    url: str
    base: str
    token: str
    process: subprocess.Popen[str]


def dsh(*args: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # type: ignore[call-overload, no-any-return]
        [sys.executable, "-c", "from dsh.runtime.cli import main; main()", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
        timeout=120,
        **kwargs,
    )


def import_log(store: Path, log: Path) -> str:
    done = dsh("sessions", "import", str(log), "--store", str(store))
    assert done.returncode == 0, done.stderr
    return done.stdout.split("as session ")[1].split()[0]


def start_web(store: Path | str, *extra: str) -> Served:
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from dsh.runtime.cli import main; main()",
            "web",
            "--store",
            str(store),
            "--port",
            "0",
            *extra,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    assert process.stdout is not None
    line = process.stdout.readline().strip()  # the first line: the address (bounded by the server's start)
    if not line.startswith("http://"):
        process.kill()
        raise AssertionError(
            f"dsh web printed {line!r}; stderr: {process.stderr.read() if process.stderr else ''}"
        )
    base, _, token = line.partition("/?token=")
    return Served(line, base, token, process)


def stop(served: Served) -> None:
    served.process.terminate()
    try:
        served.process.communicate(timeout=10)  # reads and closes its pipes
    except subprocess.TimeoutExpired:
        served.process.kill()
        served.process.communicate(timeout=10)


@contextmanager
def writing(store: Path | str, log: Path, go: Path, head: int, gap_s: float) -> Iterator[tuple[Any, str]]:
    """A `writer` process copying `log` into a new session of `store` (see writer.py): yields it with the session
    id once its first `head` events are in; it writes the rest once `go` exists. Killed if still running at the end."""
    writer = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.plugins.web.writer",
            str(store),
            str(log),
            str(go),
            str(head),
            str(gap_s),
        ],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        assert writer.stdout is not None
        yield writer, writer.stdout.readline().strip()
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.communicate(timeout=10)


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "sessions.db"


@pytest.fixture(scope="module")
def web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One server for the tests that only read: a store holding the `text-turn` recording."""
    store = tmp_path_factory.mktemp("web") / "sessions.db"
    import_log(store, HARNESS / "text-turn" / "session.jsonl")  # the store exists before the server opens it
    served = start_web(store)
    try:
        yield served
    finally:
        stop(served)


@pytest.fixture
def browser() -> Iterator[object]:
    """Chromium for one test: Playwright's sync API keeps an event loop running in this thread while it is open,
    and any later test of the worker that starts a loop of its own would fail, so it never outlives its test."""
    if not Path(CHROMIUM).exists():
        if os.environ.get("CI") == "true":
            pytest.fail(f"chromium is not installed at {CHROMIUM} (.ci/run installs Debian's chromium)")
        pytest.skip("chromium is not installed")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
            ],
        )
        try:
            yield launched
        finally:
            launched.close()
