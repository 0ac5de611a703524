"""The file tools' prompt sections, one per tool: cross-call habits only. What each tool does, and when to use it,
lives in its description (the RFC's tool-guidance ownership rule)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from dsh.runtime.prompt import PromptSection

from .config import ToolName

__all__ = ["SECTIONS"]

SECTIONS: Mapping[ToolName, PromptSection] = MappingProxyType(
    {
        "read": PromptSection(
            "tool:read",
            100,
            "To look at a file, use read, not shell commands like cat, head or tail.",
        ),
        "write": PromptSection(
            "tool:write",
            101,
            "Before you overwrite an existing file with write, read it first.",
        ),
        "edit": PromptSection(
            "tool:edit",
            102,
            "Read a file before you edit it, and copy old_string from what read showed, without the line-number "
            "prefixes. When an edit fails, read the file again before retrying.",
        ),
        "glob": PromptSection(
            "tool:glob",
            103,
            "To find files by name, use glob, not find or ls through the shell.",
        ),
        "grep": PromptSection(
            "tool:grep",
            104,
            "To search file contents, use grep, not grep or rg through the shell; then read around the lines it "
            "reports before you change them.",
        ),
    }
)
"""Each tool's section, registered with the tool: a tool the config leaves out brings no section."""
