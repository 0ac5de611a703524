"""How an MCP server's tools look in dsh: the model-facing name of a server's tool (`mcp__<server>__<tool>`, the
original's naming) and a `tools/call` result as a dsh `ToolResult` (text joined, images kept as image blocks,
structured content shown as JSON when the server sent no text for it and kept in `meta`, `isError` kept)."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

import mcp_types

from dsh.runtime.llm import ImageBlock
from dsh.runtime.tools import ToolResult

__all__ = ["MCP_TOOL_ERROR", "map_result", "tool_name", "tool_prefix"]

MCP_TOOL_ERROR = "MCP_TOOL_ERROR"
"""The code of a result the server marked `isError`."""

_MAX_NAME = 64
_INVALID = re.compile(r"[^A-Za-z0-9_-]")
_HASH_CHARS = 12


def tool_prefix(server: str) -> str:
    """Every tool name of `server` starts with this."""
    return f"mcp__{server}__"


def tool_name(server: str, tool: str) -> str:
    """The name the model calls for `server`'s tool `tool`: `mcp__<server>__<tool>` when that is a valid tool name
    (64 letters, digits, `_` or `-`); otherwise its invalid characters replaced by `_`, cut short, with a hash of
    (server, tool) appended, so two distinct tools never share a name. The raw name is what goes on the wire; the
    model-facing name is never parsed back."""
    joined = f"{tool_prefix(server)}{tool}"
    clean = _INVALID.sub("_", joined)
    if clean == joined and len(clean) <= _MAX_NAME:
        return joined
    digest = hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:_HASH_CHARS]
    return f"{clean[: _MAX_NAME - _HASH_CHARS - 1]}_{digest}"


def _describe_resource(resource: mcp_types.TextResourceContents | mcp_types.BlobResourceContents) -> str:
    if isinstance(resource, mcp_types.TextResourceContents):
        return f"[resource {resource.uri}]\n{resource.text}"
    return f"[resource {resource.uri} ({resource.mime_type or 'binary'}): {len(resource.blob)} base64 chars, not shown]"


def map_result(result: mcp_types.CallToolResult, *, server: str, tool: str) -> ToolResult:
    """`result` as the model sees it: the text blocks joined by newlines, then every image; audio, binary
    resources and resource links are named in the text. `structuredContent` is kept in `meta` and, when the
    server sent no text, shown as JSON. `meta` also names the server and its tool."""
    texts: list[str] = []
    images: list[ImageBlock] = []
    for block in result.content:
        if isinstance(block, mcp_types.TextContent):
            texts.append(block.text)
        elif isinstance(block, mcp_types.ImageContent):
            images.append(ImageBlock(data=block.data, mime_type=block.mime_type))
        elif isinstance(block, mcp_types.AudioContent):
            texts.append(f"[audio {block.mime_type}: {len(block.data)} base64 chars, not shown]")
        elif isinstance(block, mcp_types.EmbeddedResource):
            texts.append(_describe_resource(block.resource))
        elif isinstance(block, mcp_types.ResourceLink):
            texts.append(f"[resource link {block.uri}" + (f" ({block.name})" if block.name else "") + "]")
        else:  # a content type newer than this SDK: named, never dropped silently
            texts.append(f"[{getattr(block, 'type', type(block).__name__)} content, not shown]")
    meta: dict[str, Any] = {"mcpServer": server, "mcpTool": tool}
    structured = result.structured_content
    if structured is not None:
        meta["structuredContent"] = structured
        if not texts:
            texts.append(json.dumps(structured, ensure_ascii=False, sort_keys=True))
    text = "\n".join(texts)
    if not text:
        text = f"({len(images)} image{'s' if len(images) != 1 else ''})" if images else "(no output)"
    if result.is_error:
        return ToolResult(text, is_error=True, code=MCP_TOOL_ERROR, meta=meta, images=tuple(images))
    return ToolResult(text, meta=meta, images=tuple(images))
