"""The `web_fetch` and `web_search` tools, their config and the plugin. `web_search` is registered only when a
search backend is configured."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from dsh.runtime.kernel import Context, Plugin
from dsh.runtime.prompt import SYSTEM_PROMPT, PromptSection
from dsh.runtime.tools import TOOL_ENV, TOOLS, Tool, ToolContext, ToolResult

from .fetch import FetchError, FetchLimits, fetch_page
from .search import SearchBackend, SearchResults, SearxngBackend

__all__ = ["FETCH_SECTION", "SEARCH_SECTION", "SearchConfig", "WebConfig", "plugin"]

# Cross-call habits only (cite what you relied on); what each tool does and when to use it live in its
# description. The orders are the original's: search (110) before fetch (111), both after the file tools and bash
# (100-105), leaving 106-109 for other local tools' guidance.
FETCH_SECTION = PromptSection(
    "tool:web_fetch", 111, "When an answer relies on a fetched page, cite its URL as a link."
)
SEARCH_SECTION = PromptSection(
    "tool:web_search", 110, "When an answer relies on web_search results, cite the sources you used."
)

FETCH_DESCRIPTION = (
    "Fetch one web page (http or https) and return it as readable text: HTML is converted to Markdown with "
    "absolute links, plain text and JSON come back as they are, and binary content is refused. The page is cut "
    "at a size limit, and the result says so. Private and local network addresses are refused."
)
SEARCH_DESCRIPTION = (
    "Search the web. Use it before answering questions about recent events or facts you are unsure of. Give one "
    "or more queries; each returns a short answer when the search engine has one, then the top results as title, "
    "URL and snippet. Fetch a result with web_fetch to read it in full."
)


class SearchConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A search backend: `kind` (only `searxng` so far), its `base_url`, and optionally the environment variable
    holding a bearer token."""

    base_url: str
    kind: Literal["searxng"] = "searxng"
    api_key_env: str | None = None
    max_results: int = 5
    max_queries: int = 3


class WebConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    fetch: bool = True
    max_bytes: int = 2_000_000
    max_chars: int = 60_000
    timeout_ms: int = 30_000
    allow_private_networks: bool = False
    user_agent: str = "dsh-web-fetch/0.1"
    search: SearchConfig | None = None


def _fetch_tool(config: WebConfig) -> Tool:
    limits = FetchLimits(
        max_bytes=config.max_bytes,
        timeout_seconds=config.timeout_ms / 1000,
        allow_private_networks=config.allow_private_networks,
        user_agent=config.user_agent,
    )

    async def execute(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        try:
            page = await fetch_page(arguments["url"], limits)
        except FetchError as error:
            return ToolResult.error(error.code, str(error))
        text = page.text
        cut = page.truncated or len(text) > config.max_chars
        text = text[: config.max_chars]
        header = f"URL: {page.url}\nContent-Type: {page.content_type or 'unknown'}\n\n"
        footer = "\n\n[content truncated at the size limit]" if cut else ""
        return ToolResult(
            header + text + footer, meta={"url": page.url, "status": page.status, "truncated": cut}
        )

    parameters = {
        "type": "object",
        "properties": {"url": {"type": "string", "description": "The http(s) URL to fetch."}},
        "required": ["url"],
    }
    return Tool(
        name="web_fetch",
        description=FETCH_DESCRIPTION,
        parameters=parameters,
        execute=execute,
        hermetic=False,
    )


def format_results(results: SearchResults) -> str:
    lines = [f"## {results.query}"]
    if results.answer:
        lines.append(f"Answer: {results.answer}")
    if not results.hits:
        lines.append("(no results)")
    for number, hit in enumerate(results.hits, 1):
        lines.append(f"{number}. {hit.title or hit.url} - {hit.url}")
        if hit.snippet:
            lines.append(f"   {hit.snippet}")
    return "\n".join(lines)


def _search_tool(search: SearchConfig, backend: SearchBackend) -> Tool:
    async def execute(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        sections = []
        for query in arguments["queries"]:
            try:
                sections.append(format_results(await backend.search(query, limit=search.max_results)))
            except FetchError as error:
                return ToolResult.error(error.code, f"search for {query!r} failed: {error}")
        return ToolResult("\n\n".join(sections))

    parameters = {
        "type": "object",
        "properties": {
            "queries": {
                "type": "array",
                "items": {"type": "string", "minLength": 1},
                "minItems": 1,
                "maxItems": search.max_queries,
                "description": "The search queries, each searched separately.",
            }
        },
        "required": ["queries"],
    }
    return Tool(
        name="web_search",
        description=SEARCH_DESCRIPTION,
        parameters=parameters,
        execute=execute,
        hermetic=False,
    )


def _apply(ctx: Context, config: WebConfig) -> None:
    tools = ctx.get(TOOLS)
    prompt = ctx.get(SYSTEM_PROMPT)
    # Each section comes with its tool: no search backend, no web_search and no guidance about it.
    if config.fetch:
        tools.register(_fetch_tool(config))
        prompt.section(FETCH_SECTION)
    if config.search is not None:
        backend = SearxngBackend(
            config.search.base_url,
            api_key_env=config.search.api_key_env,
            timeout_seconds=config.timeout_ms / 1000,
        )
        tools.register(_search_tool(config.search, backend))
        prompt.section(SEARCH_SECTION)
        if config.search.api_key_env is not None and ctx.has(TOOL_ENV):
            ctx.get(TOOL_ENV).withhold(
                ctx, config.search.api_key_env
            )  # the search token is no tool's business


plugin = Plugin(
    name="tool-web",
    apply=_apply,
    config=WebConfig,
    needs=(SYSTEM_PROMPT, TOOLS),
    description="web_fetch, and web_search when a backend is configured, with their prompt sections",
)
