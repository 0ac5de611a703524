"""Fetching one web page for the model: only http(s), only public addresses unless configured otherwise (each hop
connects to the address it checked, see `target`), bounded in bytes and time, redirects re-checked hop by hop, and
HTML turned into readable Markdown."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urljoin

import anyio

from .errors import FetchError
from .target import Target, parse_url, resolve

if TYPE_CHECKING:  # httpx (~40 ms) is imported when the tool first runs, not when its plugin loads
    import httpx

__all__ = ["FetchError", "FetchLimits", "Page", "fetch_page", "html_to_text"]

_MAX_REDIRECTS = 5
_DROPPED_TAGS = ("script", "style", "noscript", "template", "svg", "iframe", "head")


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
    # imported on the first page converted: every deployment with web_fetch loads this module, and most runs (every
    # replay, where web_fetch is served from the recording) convert no page; bs4 and its CSS engine cost ~40 ms
    from bs4 import BeautifulSoup
    from markdownify import MarkdownConverter

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


def _decode(body: bytes, response: httpx.Response) -> str:
    try:
        return body.decode(response.charset_encoding or "utf-8", errors="replace")
    except LookupError:  # a charset Python does not know (the server's word, not ours): read it as UTF-8
        return body.decode("utf-8", errors="replace")


def _pinned_request(client: httpx.AsyncClient, target: Target, address: str) -> httpx.Request:
    """GET `target` from `address`: the URL names the checked address, so the client connects there and nowhere
    else, while the Host header and the TLS server name (SNI, and the certificate check) stay the URL's host."""
    extensions = {} if target.is_ip_literal or target.url.scheme != "https" else {"sni_hostname": target.host}
    return client.build_request(
        "GET",
        target.url.copy_with(host=address),
        headers={"Host": target.url.netloc.decode("ascii")},
        extensions=extensions,
    )


async def fetch_page(url: str, limits: FetchLimits) -> Page:
    """GET `url` (following up to five redirects, each checked like the first) and return its text. Each hop's host
    is resolved once and the connection goes to the address that was checked, so a name that resolves differently
    the second time (DNS rebinding) cannot reach a private address."""
    import httpx

    try:
        with anyio.fail_after(limits.timeout_seconds):
            # No proxies from the environment: a proxy would connect on our behalf, past the check. Requests go
            # straight to the transport: the client would parse a redirect's Location itself, before we can.
            transport = httpx.AsyncHTTPTransport(trust_env=False)
            async with httpx.AsyncClient(
                headers={"User-Agent": limits.user_agent}, timeout=None, trust_env=False, transport=transport
            ) as client:
                for _ in range(_MAX_REDIRECTS + 1):
                    target = parse_url(url)
                    address = await resolve(target, allow_private=limits.allow_private_networks)
                    request = _pinned_request(client, target, address)
                    response = await transport.handle_async_request(request)
                    response.request = request
                    try:
                        if response.is_redirect and "location" in response.headers:
                            url = _redirect(target, response.headers["location"])
                            continue
                        return await _read(str(target.url), response, limits)
                    finally:
                        await response.aclose()
                raise FetchError("TOO_MANY_REDIRECTS", f"more than {_MAX_REDIRECTS} redirects")
    except TimeoutError as error:
        raise FetchError("TIMEOUT", f"no complete answer within {limits.timeout_seconds:g}s") from error
    except (httpx.InvalidURL, httpx.UnsupportedProtocol) as error:
        raise FetchError("INVALID_URL", f"{url!r} is not a valid URL: {error}") from error
    except httpx.HTTPError as error:
        raise FetchError("TRANSPORT", f"{type(error).__name__}: {error}") from error


def _redirect(target: Target, location: str) -> str:
    import httpx

    try:
        return str(target.url.join(location))
    except (httpx.InvalidURL, ValueError, UnicodeError) as error:
        raise FetchError(
            "INVALID_URL", f"{target.url} redirected to {location!r}, which is not a valid URL: {error}"
        ) from error


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
    return Page(url, response.status_code, content_type, text, truncated)
