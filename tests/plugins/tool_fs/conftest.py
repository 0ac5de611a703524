"""Fixtures for the file tools' tests: a workspace, a directory beside it, and the tools loaded there."""

from __future__ import annotations

from pathlib import Path

import pytest

from .harness import Fs, load


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory beside the workspace, holding a file no tool may touch."""
    path = tmp_path / "outside"
    path.mkdir()
    (path / "secret.txt").write_text("secret\n")
    return path


@pytest.fixture
def fs(workspace: Path) -> Fs:
    return load(workspace)
