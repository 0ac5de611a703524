"""What dsh is installed as: its distribution's name and installed version, read without importlib.metadata (which
costs more to import than the rest of `dsh --version`)."""

from __future__ import annotations

import os
import sys

__all__ = ["DISTRIBUTION", "version"]

DISTRIBUTION = "dsh-runtime"
"""dsh's name on PyPI (`dsh` there is an unrelated project)."""

_DIST_INFO = (DISTRIBUTION.replace("-", "_") + "-", ".dist-info")


def _metadata_version() -> str | None:
    # The installed distribution's METADATA is found on sys.path as importlib.metadata would find it (the first
    # `dsh_runtime-*.dist-info`), and its Version read.
    for entry in sys.path:
        try:
            names = sorted(os.listdir(entry or "."))
        except OSError:  # a zip or a missing directory on sys.path holds no dist-info of ours
            continue
        for name in names:
            if name.startswith(_DIST_INFO[0]) and name.endswith(_DIST_INFO[1]):
                try:
                    with open(os.path.join(entry or ".", name, "METADATA"), encoding="utf-8") as handle:
                        for line in handle:
                            if line.startswith("Version:"):
                                return line.removeprefix("Version:").strip()
                            if not line.strip():
                                break
                except OSError:  # a dist-info without METADATA: keep looking, as importlib.metadata would
                    continue
    return None


def version() -> str:
    """The installed distribution's version ("unknown" in a source tree that was never installed)."""
    found = _metadata_version()
    if found is not None:
        return found
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed(DISTRIBUTION)
    except PackageNotFoundError:
        return "unknown"
