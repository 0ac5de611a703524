"""What an MCP server is to dsh: its spec in the `.mcp.json` entry shape (`{command, args, env, cwd}` for stdio,
`{type: http | sse, url, headers}` for the network transports), the plugin's config, a project's `.mcp.json`, and
the `${NAME}` references that keep secrets out of config files (resolved from the environment; a value is never
put in an error or a log line, only the name that was missing)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import msgspec

from dsh.runtime.kernel import ConfigError
from dsh.runtime.tools import EnvPolicy

__all__ = [
    "MCP_JSON",
    "SERVER_NAME",
    "EnvConfig",
    "HttpServer",
    "McpConfig",
    "ServerSpec",
    "StdioServer",
    "expand",
    "parse_servers",
    "read_project_servers",
    "resolved",
]

MCP_JSON = ".mcp.json"
"""The project file (Claude Code's, and the original's): `{"mcpServers": {NAME: ENTRY}}`."""

SERVER_NAME = re.compile(r"[A-Za-z0-9_-]{1,48}")
"""A server's name becomes part of each of its tools' names (`mcp__<server>__<tool>`)."""

_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class StdioServer(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """A server dsh starts as a child process and talks to over its stdin and stdout. `cwd` defaults to the
    session's workspace; `env` is added to what the tool environment policy lets a child inherit (so a key the
    policy withholds reaches the server only when named here: `GITHUB_TOKEN: ${GITHUB_TOKEN}`)."""

    command: str
    args: tuple[str, ...] = ()
    env: dict[str, str] = msgspec.field(default_factory=dict)
    cwd: str | None = None
    type: Literal["stdio"] = "stdio"


class HttpServer(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """A server dsh reaches at `url`: `type: http` (streamable HTTP) or `sse` (the older HTTP+SSE transport)."""

    type: Literal["http", "sse"]
    url: str
    headers: dict[str, str] = msgspec.field(default_factory=dict)


ServerSpec = StdioServer | HttpServer


class EnvConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The tool environment policy's additions for stdio servers (as tool_bash's `env`)."""

    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        self.policy()  # validates every entry

    def policy(self) -> EnvPolicy:
        return EnvPolicy(allow=self.allow, deny=self.deny)


class McpConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """`servers`: name -> `.mcp.json` entry. `project_config`: also read the session workspace's `.mcp.json`
    (a server named in both is the deployment's). `start`: `session` connects a session's servers when its first
    turn starts and waits for them (up to `connect_timeout_s`), so the first request lists their tools; `lazy`
    starts them then without waiting (their tools join the request once connected). `call_timeout_s` bounds one
    tool call; `restart_backoff_s` is the first wait before a crashed server is started again (doubling up to
    `max_backoff_s`). `env`: the environment policy's additions for stdio servers."""

    servers: dict[str, Any] = msgspec.field(default_factory=dict)
    project_config: bool = False
    start: Literal["session", "lazy"] = "session"
    connect_timeout_s: float = 30.0
    call_timeout_s: float = 120.0
    restart_backoff_s: float = 1.0
    max_backoff_s: float = 30.0
    env: EnvConfig = EnvConfig()

    def __post_init__(self) -> None:
        for name in ("connect_timeout_s", "call_timeout_s", "restart_backoff_s", "max_backoff_s"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be a positive number of seconds")
        parse_servers(self.servers, where="servers")  # validated at load, used per session


def parse_servers(entries: Mapping[str, Any], *, where: str) -> dict[str, ServerSpec]:
    """`{name: entry}` as server specs; a bad name or entry is an error naming `where` and the server."""
    if not isinstance(entries, Mapping):
        raise ValueError(f"{where}: expected a mapping of server name to server entry")
    specs: dict[str, ServerSpec] = {}
    for name, entry in entries.items():
        if not isinstance(name, str) or not SERVER_NAME.fullmatch(name):
            raise ValueError(
                f'{where}: server name "{name}" is invalid; use 1-48 letters, digits, "_" or "-" (it becomes part '
                "of each tool name, mcp__<server>__<tool>)"
            )
        if not isinstance(entry, Mapping):
            raise ValueError(f"{where}.{name}: expected a mapping with `command` (stdio) or `type` and `url`")
        kind = entry.get("type", "stdio")
        try:
            if kind == "stdio":
                specs[name] = msgspec.convert(entry, StdioServer)
            elif kind in ("http", "sse", "streamable-http"):
                fixed = {**entry, "type": "http" if kind == "streamable-http" else kind}
                specs[name] = msgspec.convert(fixed, HttpServer)
            else:
                raise ValueError(f'unknown type "{kind}"; valid: stdio (the default), http, sse')
        except (msgspec.ValidationError, ValueError) as error:
            raise ValueError(f"{where}.{name}: {error}") from None
    return specs


def expand(value: str, environ: Mapping[str, str], *, where: str) -> str:
    """`value` with each `${NAME}` (or `${NAME:-default}`) replaced from `environ`; an unset name without a default
    is an error naming it and `where`, never the value."""

    def one(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        found = environ.get(name)
        if found is not None:
            return found
        if default is not None:
            return default
        raise ConfigError(
            f"{where}: ${{{name}}} is not set in the environment (set it, or write ${{{name}:-default}})"
        )

    return _REFERENCE.sub(one, value)


def resolved(spec: ServerSpec, environ: Mapping[str, str], *, where: str) -> ServerSpec:
    """`spec` with the references in its env values, headers, args, url and cwd resolved."""
    if isinstance(spec, StdioServer):
        return msgspec.structs.replace(
            spec,
            command=expand(spec.command, environ, where=f"{where}.command"),
            args=tuple(expand(a, environ, where=f"{where}.args") for a in spec.args),
            env={k: expand(v, environ, where=f"{where}.env.{k}") for k, v in spec.env.items()},
            cwd=None if spec.cwd is None else expand(spec.cwd, environ, where=f"{where}.cwd"),
        )
    return msgspec.structs.replace(
        spec,
        url=expand(spec.url, environ, where=f"{where}.url"),
        headers={k: expand(v, environ, where=f"{where}.headers.{k}") for k, v in spec.headers.items()},
    )


def read_project_servers(workspace: Path) -> dict[str, ServerSpec]:
    """The servers of `workspace/.mcp.json` (none when there is no such file); a malformed file is an error naming
    it."""
    path = workspace / MCP_JSON
    if not path.is_file():
        return {}
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ConfigError(f"{path}: not a readable JSON file: {error}") from None
    if not isinstance(document, dict) or not isinstance(document.get("mcpServers", {}), dict):
        raise ConfigError(f'{path}: expected {{"mcpServers": {{NAME: ENTRY, ...}}}}')
    try:
        return parse_servers(document.get("mcpServers", {}), where=f"{path}: mcpServers")
    except ValueError as error:
        raise ConfigError(str(error)) from None
