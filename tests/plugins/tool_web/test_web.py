"""web_fetch and web_search against a local HTTP server on 127.0.0.1 that each test module starts and stops."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from dsh.plugins.tool_web import html_to_text, plugin
from dsh.runtime.kernel import Context
from dsh.runtime.llm import CallId, ToolCallBlock
from dsh.runtime.prompt import SYSTEM_PROMPT
from dsh.runtime.tools import TOOLS, ToolContext, ToolResult

from ..tool_host import registries, tool_host

PAGE = b"""<html><head><title>T</title><style>p{}</style></head><body>
<script>alert('x')</script><h1>Hello</h1><p>See <a href="/docs">the docs</a>.</p>
<ul><li>one</li><li>two</li></ul></body></html>"""


class Handler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the tests read results, not the server's log."""

    def send(self, status: int, body: bytes, content_type: str, **headers: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        if url.path == "/page.html":
            self.send(200, PAGE, "text/html; charset=utf-8")
        elif url.path == "/plain":
            self.send(200, "caf\u00e9\n".encode(), "text/plain; charset=utf-8")
        elif url.path == "/big":
            self.send(200, b"x" * 50_000, "text/plain")
        elif url.path == "/redirect":
            self.send(302, b"", "text/plain", Location="/page.html")
        elif url.path == "/loop":
            self.send(302, b"", "text/plain", Location="/loop")
        elif url.path == "/image":
            self.send(200, b"\x89PNG", "image/png")
        elif url.path == "/slow":
            time.sleep(1.0)
            self.send(200, b"late", "text/plain")
        elif url.path == "/search":
            query = parse_qs(url.query)["q"][0]
            body = {
                "answers": ["42"] if query == "answer" else [],
                "results": [
                    {"title": f"{query} {n}", "url": f"https://example.org/{n}", "content": f"about {query}"}
                    for n in range(1, 4)
                ],
            }
            self.send(200, json.dumps(body).encode(), "application/json")
        else:
            self.send(404, b"no such page", "text/plain")


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def host(**config: Any) -> Context:
    ctx = tool_host()
    ctx.plugin(plugin, config)
    return ctx


async def call(ctx: Context, tool: str, **arguments: Any) -> ToolResult:
    return await ctx.get(TOOLS).execute(
        ToolCallBlock(CallId("c1"), tool, json.dumps(arguments)), ToolContext(ctx, Path.cwd(), "c1")
    )


LOCAL = {"allow_private_networks": True}


@pytest.mark.anyio
async def test_html_becomes_markdown_with_absolute_links(server: str) -> None:
    result = await call(host(**LOCAL), "web_fetch", url=f"{server}/redirect")
    assert not result.is_error
    assert result.text == (
        f"URL: {server}/page.html\nContent-Type: text/html\n\n"
        f"# Hello\n\nSee [the docs]({server}/docs).\n\n- one\n- two"
    )
    assert result.meta == {"url": f"{server}/page.html", "status": 200, "truncated": False}


@pytest.mark.anyio
async def test_plain_text_is_decoded_by_its_charset(server: str) -> None:
    result = await call(host(**LOCAL), "web_fetch", url=f"{server}/plain")
    assert result.text.endswith("caf\u00e9\n")


@pytest.mark.anyio
async def test_size_cap_truncates_and_says_so(server: str) -> None:
    result = await call(host(max_bytes=1000, **LOCAL), "web_fetch", url=f"{server}/big")
    assert result.text.endswith("x" * 1000 + "\n\n[content truncated at the size limit]")
    assert result.meta["truncated"] is True


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("path", "code", "message"),
    [
        ("/missing", "HTTP_404", "answered 404: no such page"),
        ("/loop", "TOO_MANY_REDIRECTS", "more than 5 redirects"),
        ("/image", "UNSUPPORTED_CONTENT", "image/png, which cannot be shown as text"),
    ],
)
async def test_failures_are_error_results(server: str, path: str, code: str, message: str) -> None:
    result = await call(host(**LOCAL), "web_fetch", url=f"{server}{path}")
    assert (result.is_error, result.code) == (True, code)
    assert message in result.text


@pytest.mark.anyio
async def test_time_cap(server: str) -> None:
    result = await call(host(timeout_ms=200, **LOCAL), "web_fetch", url=f"{server}/slow")
    assert (result.code, result.text) == ("TIMEOUT", "no complete answer within 0.2s")


@pytest.mark.anyio
async def test_private_addresses_and_other_schemes_are_refused(server: str) -> None:
    blocked = await call(host(), "web_fetch", url=f"{server}/page.html")
    assert blocked.code == "BLOCKED_ADDRESS"
    assert "127.0.0.1, a non-public address" in blocked.text
    file_url = await call(host(), "web_fetch", url="file:///etc/passwd")
    assert (file_url.code, file_url.text) == (
        "UNSUPPORTED_SCHEME",
        "only http and https URLs can be fetched, not 'file:///etc/passwd'",
    )


@pytest.mark.anyio
async def test_search_formats_answers_and_hits(server: str) -> None:
    ctx = host(search={"base_url": server, "max_results": 2})
    result = await call(ctx, "web_search", queries=["answer", "plain"])
    assert result.text == (
        "## answer\nAnswer: 42\n"
        "1. answer 1 - https://example.org/1\n   about answer\n"
        "2. answer 2 - https://example.org/2\n   about answer\n\n"
        "## plain\n"
        "1. plain 1 - https://example.org/1\n   about plain\n"
        "2. plain 2 - https://example.org/2\n   about plain"
    )
    too_many = await call(ctx, "web_search", queries=["a", "b", "c", "d"])
    assert too_many.code == "INVALID_ARGUMENTS"


def test_search_is_registered_only_with_a_backend() -> None:
    assert [t.name for t in host().get(TOOLS).visible()] == ["web_fetch"]
    with_search = host(search={"base_url": "http://127.0.0.1:9"})
    assert [t.name for t in with_search.get(TOOLS).visible()] == ["web_fetch", "web_search"]


def sections(ctx: Context) -> list[str]:
    """The sections after the prompt service's own (identity, persona)."""
    return [name for name, _, _ in ctx.get(SYSTEM_PROMPT).describe()[""]["sections"]][2:]


@pytest.mark.parametrize(
    ("config", "tools"),
    [
        ({}, ["web_fetch"]),
        ({"search": {"base_url": "http://127.0.0.1:9"}}, ["web_fetch", "web_search"]),
        ({"fetch": False, "search": {"base_url": "http://127.0.0.1:9"}}, ["web_search"]),
        ({"fetch": False}, []),
    ],
)
def test_each_section_comes_and_goes_with_its_tool(config: dict[str, Any], tools: list[str]) -> None:
    ctx = tool_host()
    before = registries(ctx)
    loaded = ctx.plugin(plugin, config)
    assert [t.name for t in ctx.get(TOOLS).visible()] == tools
    assert sections(ctx) == [f"tool:{name}" for name in tools]
    loaded.unload()
    assert registries(ctx) == before


def test_html_to_text_drops_non_content() -> None:
    assert (
        html_to_text("<p>a</p><script>x()</script><style>b{}</style><p>b</p>", "https://e.org/") == "a\n\nb"
    )
