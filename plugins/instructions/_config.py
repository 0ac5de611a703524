"""The `instructions` plugin's config: which files are instructions, where a project starts, and the byte limits; and
the baseline identity the original derives from them."""

from __future__ import annotations

import json
import os
from pathlib import Path

import msgspec

__all__ = ["Config", "baseline_identity"]

_RESERVED = frozenset({"", ".", ".."})


class Config(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """`project_root_markers`: names whose presence marks the project root, looked for from the working directory
    upwards (none found: the working directory is the root). `instruction_files`, then `local_instruction_files`: the
    candidates read in every directory from the root down to the working directory. `max_bytes`: the UTF-8 budget of
    one rendered message (0 turns the plugin off); `max_source_bytes`: a file larger than this is not read at all.
    `user_global`: also read `AGENTS.md` in `dsh_home` (default `$DSH_HOME`, else `~/.dsh`)."""

    project_root_markers: tuple[str, ...] = (".git",)
    instruction_files: tuple[str, ...] = ("AGENTS.md", "CLAUDE.md")
    local_instruction_files: tuple[str, ...] = ("AGENTS.local.md", "CLAUDE.local.md")
    max_bytes: int = 65536
    max_source_bytes: int = 1_048_576
    user_global: bool = True
    dsh_home: str | None = None

    def __post_init__(self) -> None:
        for field in ("instruction_files", "local_instruction_files", "project_root_markers"):
            for name in getattr(self, field):
                if name in _RESERVED or "/" in name or "\\" in name:
                    raise ValueError(
                        f"instructions: {field} entry {name!r} is not a file name; give a bare name such as "
                        "AGENTS.md (no '/', not '.' or '..')"
                    )
        if self.max_source_bytes < 1:
            raise ValueError(
                f"instructions: max_source_bytes must be at least 1, got {self.max_source_bytes}"
            )

    def home(self) -> Path:
        """The directory of the user-global `AGENTS.md`."""
        if self.dsh_home is not None:
            return Path(self.dsh_home).expanduser()
        env = os.environ.get("DSH_HOME")
        return Path(env).expanduser() if env else Path.home() / ".dsh"

    def home_display(self) -> str:
        """How the user-global file's directory is written to the model."""
        return "$DSH_HOME" if self.dsh_home is None and os.environ.get("DSH_HOME") else "~/.dsh"


def baseline_identity(config: Config, cwd: Path, root: Path) -> str:
    """The settings a baseline was made under, as the original serialises them (compact JSON, this key order): a
    baseline whose identity differs from the current one is sent again, replacing the old."""
    return json.dumps(
        {
            "projectRoot": os.path.relpath(root, cwd) if root != cwd else "",
            "projectRootMarkers": list(config.project_root_markers),
            "maxBytes": config.max_bytes,
            "maxSourceBytes": config.max_source_bytes,
            "instructionFileCandidates": list(config.instruction_files),
            "localInstructionFileCandidates": list(config.local_instruction_files),
        },
        separators=(",", ":"),
        ensure_ascii=False,
    )
