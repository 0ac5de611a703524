"""The plugin: each tool's description and JSON schema (parameter names and types as the original harness's, so
recorded sessions replay), the per-call workspace, and the wrapper that runs the work off the event loop and turns
refusals into error results."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import anyio

from dsh.runtime.kernel import Context, Plugin
from dsh.runtime.prompt import SYSTEM_PROMPT
from dsh.runtime.tools import TOOLS, Tool, ToolContext, ToolResult

from .config import Config, ToolName
from .edit import edit_path
from .errors import FILE_NOT_FOUND, IO_ERROR, NOT_A_DIRECTORY, NOT_A_FILE, PERMISSION_DENIED, FsError
from .find import glob_files
from .grep import GrepLimits, grep_files
from .paths import Workspace
from .read import ReadCaps, read_path
from .sections import SECTIONS
from .write import write_path

__all__ = ["plugin", "tools"]

_PATH_NOTE = "relative to the workspace root, or absolute inside it"


def _read_tool(config: Config) -> Tool:
    caps = ReadCaps(config.read_max_lines, config.read_max_line_chars, config.read_max_bytes)

    async def execute(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        offset = int(arguments.get("offset", 1))
        limit = int(arguments["limit"]) if "limit" in arguments else None
        return await _run(
            partial(read_path, _workspace(config, context), arguments["file_path"], offset, limit, caps)
        )

    return Tool(
        name="read",
        description=(
            "Read a UTF-8 text file and return its lines numbered from 1, as `N: text`. Returns up to "
            f"{config.read_max_lines} lines from `offset`; a long file is read in windows with `offset` and "
            f"`limit`, and a truncated result says which offset continues it. Lines longer than "
            f"{config.read_max_line_chars} characters are cut, and one result holds at most about "
            f"{config.read_max_bytes // 1024} KB. Binary files are refused. Given a directory, lists its entries "
            "(subdirectories end in `/`)."
        ),
        parameters={
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": f"Path of the file to read, {_PATH_NOTE}."},
                "offset": {
                    "type": "number",
                    "minimum": 1,
                    "multipleOf": 1,
                    "description": "1-based number of the first line to return. Defaults to 1.",
                },
                "limit": {
                    "type": "number",
                    "minimum": 1,
                    "multipleOf": 1,
                    "description": f"How many lines to return at most. Defaults to (and may not exceed) "
                    f"{config.read_max_lines}.",
                },
            },
            "required": ["file_path"],
        },
        execute=execute,
    )


def _write_tool(config: Config) -> Tool:
    async def execute(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return await _run(
            partial(write_path, _workspace(config, context), arguments["file_path"], arguments["content"])
        )

    return Tool(
        name="write",
        description=(
            "Create a UTF-8 text file, or replace an existing file's whole content. Missing parent directories are "
            "created. To change part of an existing file, use edit instead."
        ),
        parameters={
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": f"Path of the file to write, {_PATH_NOTE}."},
                "content": {"type": "string", "description": "The complete new content of the file."},
            },
            "required": ["file_path", "content"],
        },
        execute=execute,
    )


def _edit_tool(config: Config) -> Tool:
    async def execute(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return await _run(
            partial(
                edit_path,
                _workspace(config, context),
                arguments["file_path"],
                arguments["old_string"],
                arguments["new_string"],
                bool(arguments.get("replace_all", False)),
            )
        )

    return Tool(
        name="edit",
        description=(
            "Replace text in an existing UTF-8 text file. `old_string` is literal text (no regex) that must match "
            "the file exactly, whitespace and indentation included. Unless `replace_all` is true it must occur "
            "exactly once; otherwise the call fails and says how many times it occurs. `new_string` must differ "
            "from `old_string`; an empty `new_string` deletes the match."
        ),
        parameters={
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": f"Path of the file to edit, {_PATH_NOTE}."},
                "old_string": {"type": "string", "description": "The exact text to replace."},
                "new_string": {
                    "type": "string",
                    "description": "The text to put in its place; an empty string deletes it.",
                },
                "replace_all": {
                    "type": "boolean",
                    "description": "Replace every occurrence. Defaults to false, when old_string must occur "
                    "exactly once.",
                },
            },
            "required": ["file_path", "old_string", "new_string"],
        },
        execute=execute,
    )


def _glob_tool(config: Config) -> Tool:
    async def execute(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return await _run(
            partial(
                glob_files,
                _workspace(config, context),
                arguments["pattern"],
                arguments.get("path"),
                config.glob_max_results,
                config.exclude_dirs,
                check_cancelled=anyio.from_thread.check_cancelled,
            )
        )

    return Tool(
        name="glob",
        description=(
            "Find files by name with a glob pattern and return their paths, newest first, at most "
            f"{config.glob_max_results}. `*` and `?` match within one path segment, `**` across directories, "
            "`[abc]` one of the characters, `{a,b}` either alternative. A pattern without `/` matches file names "
            "at any depth (`*.py`); a pattern with `/` matches paths relative to `path` (`src/**/*.ts`). Lists "
            "files only, hidden files included." + _skipped(config)
        ),
        parameters={
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "minLength": 1, "description": "The glob to match."},
                "path": {
                    "type": "string",
                    "description": f"Directory to search, {_PATH_NOTE}. Defaults to the workspace root.",
                },
            },
            "required": ["pattern"],
        },
        execute=execute,
    )


def _grep_tool(config: Config) -> Tool:
    limits = GrepLimits(
        max_matches=config.grep_max_matches,
        max_line_chars=config.grep_max_line_chars,
        max_line_bytes=config.grep_max_line_bytes,
        exclude_dirs=config.exclude_dirs,
    )

    async def execute(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return await _run(
            partial(
                grep_files,
                _workspace(config, context),
                arguments["pattern"],
                arguments.get("path"),
                arguments.get("include"),
                limits,
                check_cancelled=anyio.from_thread.check_cancelled,
            )
        )

    return Tool(
        name="grep",
        description=(
            "Search file contents for a regular expression and return the matching lines with their line "
            "numbers, grouped by file, newest file first, at most "
            f"{config.grep_max_matches} lines. The syntax is RE2's, which reads common ripgrep patterns the "
            "same way (no backreferences or lookaround); each line is matched on its own. Binary files are skipped."
            + _skipped(config)
        ),
        parameters={
            "type": "object",
            "properties": {
                "pattern": {
                    "type": "string",
                    "minLength": 1,
                    "description": "The regular expression to find.",
                },
                "path": {
                    "type": "string",
                    "description": f"Directory or single file to search, {_PATH_NOTE}. Defaults to the "
                    "workspace root.",
                },
                "include": {
                    "type": "string",
                    "description": 'One glob that searched files must match, e.g. "*.py" or "*.{ts,tsx}" (without '
                    "`/` it matches file names at any depth).",
                },
            },
            "required": ["pattern"],
        },
        execute=execute,
    )


def _skipped(config: Config) -> str:
    if not config.exclude_dirs:
        return ""
    names = ", ".join(f"`{name}`" for name in config.exclude_dirs)
    return f" Directories named {names} are not searched."


_BUILDERS: dict[ToolName, Callable[[Config], Tool]] = {
    "read": _read_tool,
    "write": _write_tool,
    "edit": _edit_tool,
    "glob": _glob_tool,
    "grep": _grep_tool,
}


def tools(config: Config) -> list[Tool]:
    """The tools `config` enables, in the order read, write, edit, glob, grep."""
    return [tool for _, tool in _enabled(config)]


def _enabled(config: Config) -> list[tuple[ToolName, Tool]]:
    return [(name, build(config)) for name, build in _BUILDERS.items() if name in config.tools]


def _workspace(config: Config, context: ToolContext) -> Workspace:
    # An absolute `root` replaces the cwd; a relative one is taken from it.
    return Workspace.at(context.cwd / config.root if config.root is not None else context.cwd)


async def _run(work: Callable[[], ToolResult]) -> ToolResult:
    """Run blocking file work in a worker thread; a refusal or an OS failure becomes an error result with a
    stable code."""
    try:
        return await anyio.to_thread.run_sync(work)
    except FsError as error:
        return ToolResult.error(error.code, str(error))
    except OSError as error:
        where = f": {error.filename}" if error.filename else ""
        return ToolResult.error(_os_code(error), f"{error.strerror or error}{where}")


def _os_code(error: OSError) -> str:
    if isinstance(error, FileNotFoundError):
        return FILE_NOT_FOUND
    if isinstance(error, PermissionError):
        return PERMISSION_DENIED
    if isinstance(error, IsADirectoryError):
        return NOT_A_FILE
    if isinstance(error, NotADirectoryError):
        return NOT_A_DIRECTORY
    return IO_ERROR


def _apply(ctx: Context, config: Config) -> None:
    registry = ctx.get(TOOLS)
    prompt = ctx.get(SYSTEM_PROMPT)
    for name, tool in _enabled(config):
        registry.register(tool)
        prompt.section(SECTIONS[name])  # a tool left out by config brings no section


plugin = Plugin(
    name="tool_fs",
    apply=_apply,
    config=Config,
    needs=(SYSTEM_PROMPT, TOOLS),
    description="The file tools read, write, edit, glob and grep, confined to the workspace root, and their "
    "prompt sections.",
)
