"""Fetching one web page for the model: only http(s), only public addresses unless configured otherwise, bounded
in bytes and time, redirects re-checked hop by hop, and HTML turned into readable Markdown."""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

import anyio
import httpx
from bs4 import BeautifulSoup
from markdownify import MarkdownConverter

__all__ = ["FetchError", "FetchLimits", "Page", "fetch_page", "html_to_text"]

_MAX_REDIRECTS = 5
_DROPPED_TAGS = ("script", "style", "noscript", "template", "svg", "iframe", "head")


class FetchError(Exception):
    """A fetch the tool refuses or that failed; `code` is stable and becomes the error result's code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class FetchLimits:
    max_bytes: int
    timeout_seconds: float
    allow_private_networks: bool
    user_agent: str


@dataclass(frozen=True)
class Page:
    url: str
    status: int
    content_type: str
    text: str
    truncated: bool


def html_to_text(html: str, base_url: str) -> str:
    """Readable Markdown of an HTML page: scripts, styles and other non-content dropped; links made absolute."""
    soup = BeautifulSoup(html, "html.parser")
    for tag in soup.find_all(_DROPPED_TAGS):
        tag.decompose()
    for link in soup.find_all("a", href=True):
        link["href"] = urljoin(base_url, str(link["href"]))
    markdown = MarkdownConverter(heading_style="ATX", bullets="-").convert_soup(soup)
    lines = [line.rstrip() for line in markdown.splitlines()]
    # Collapse the runs of blank lines that layout markup leaves behind.
    collapsed: list[str] = []
    for line in lines:
        if line or (collapsed and collapsed[-1]):
            collapsed.append(line)
    return "\n".join(collapsed).strip()


async def _check_address(host: str, port: int, limits: FetchLimits) -> None:
    if limits.allow_private_networks:
        return
    try:
        infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as error:
        raise FetchError("DNS", f"cannot resolve {host}: {error}") from error
    for info in infos:
        address = ipaddress.ip_address(info[4][0])
        if not address.is_global:
            raise FetchError(
                "BLOCKED_ADDRESS",
                f"{host} resolves to {address}, a non-public address; fetching private, loopback and link-local "
                "addresses is disabled (config allow_private_networks)",
            )


def _check_url(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise FetchError("UNSUPPORTED_SCHEME", f"only http and https URLs can be fetched, not {url!r}")
    if not parts.hostname:
        raise FetchError("INVALID_URL", f"{url!r} has no host")
    return parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)


def _decode(body: bytes, response: httpx.Response) -> str:
    return body.decode(response.charset_encoding or "utf-8", errors="replace")


async def fetch_page(url: str, limits: FetchLimits) -> Page:
    """GET `url` (following up to five redirects, each checked like the first) and return its text."""
    try:
        with anyio.fail_after(limits.timeout_seconds):
            async with httpx.AsyncClient(
                follow_redirects=False, headers={"User-Agent": limits.user_agent}, timeout=None
            ) as client:
                for _ in range(_MAX_REDIRECTS + 1):
                    host, port = _check_url(url)
                    await _check_address(host, port, limits)
                    async with client.stream("GET", url) as response:
                        if response.is_redirect and "location" in response.headers:
                            url = urljoin(url, response.headers["location"])
                            continue
                        return await _read(url, response, limits)
                raise FetchError("TOO_MANY_REDIRECTS", f"more than {_MAX_REDIRECTS} redirects")
    except TimeoutError as error:
        raise FetchError("TIMEOUT", f"no complete answer within {limits.timeout_seconds:g}s") from error
    except httpx.HTTPError as error:
        raise FetchError("TRANSPORT", f"{type(error).__name__}: {error}") from error


async def _read(url: str, response: httpx.Response, limits: FetchLimits) -> Page:
    content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
    body = bytearray()
    truncated = False
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) > limits.max_bytes:
            del body[limits.max_bytes :]
            truncated = True
            break
    if response.status_code >= 400:
        snippet = _decode(bytes(body[:500]), response).strip()
        raise FetchError(f"HTTP_{response.status_code}", f"{url} answered {response.status_code}: {snippet}")
    if content_type in ("text/html", "application/xhtml+xml"):
        text = html_to_text(_decode(bytes(body), response), url)
    elif content_type.startswith("text/") or content_type.endswith(("json", "xml")) or not content_type:
        text = _decode(bytes(body), response)
    else:
        raise FetchError("UNSUPPORTED_CONTENT", f"{url} is {content_type}, which cannot be shown as text")
    return Page(str(response.url), response.status_code, content_type, text, truncated)
