"""Web search backends: the protocol the `web_search` tool calls, and a SearXNG-compatible JSON backend."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Protocol

from .errors import FetchError

__all__ = ["SearchBackend", "SearchHit", "SearchResults", "SearxngBackend"]


@dataclass(frozen=True)
class SearchHit:
    title: str
    url: str
    snippet: str


@dataclass(frozen=True)
class SearchResults:
    query: str
    answer: str | None
    hits: tuple[SearchHit, ...]


class SearchBackend(Protocol):
    async def search(self, query: str, *, limit: int) -> SearchResults: ...


class SearxngBackend:
    """A SearXNG instance (or anything serving its `/search?format=json` API) at `base_url`."""

    def __init__(self, base_url: str, *, api_key_env: str | None, timeout_seconds: float) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key_env = api_key_env
        self.timeout_seconds = timeout_seconds

    async def search(self, query: str, *, limit: int) -> SearchResults:
        import httpx

        headers = {}
        if self.api_key_env:
            key = os.environ.get(self.api_key_env)
            if not key:
                raise FetchError("AUTH", f"the search backend needs ${self.api_key_env}, which is not set")
            headers["Authorization"] = f"Bearer {key}"
        try:
            async with httpx.AsyncClient(timeout=self.timeout_seconds, headers=headers) as client:
                response = await client.get(f"{self.base_url}/search", params={"q": query, "format": "json"})
        except httpx.TimeoutException as error:
            raise FetchError(
                "TIMEOUT", f"the search backend did not answer within {self.timeout_seconds:g}s"
            ) from error
        except httpx.HTTPError as error:
            raise FetchError(
                "TRANSPORT", f"the search backend failed: {type(error).__name__}: {error}"
            ) from error
        if response.status_code != 200:
            raise FetchError(
                f"HTTP_{response.status_code}", f"the search backend answered {response.status_code}"
            )
        try:
            body = response.json()
            hits = tuple(
                SearchHit(str(r.get("title", "")), str(r["url"]), str(r.get("content", "")))
                for r in body.get("results", [])[:limit]
            )
            answers = [str(a) for a in body.get("answers", []) if a]
        except (ValueError, KeyError, AttributeError, TypeError) as error:
            raise FetchError(
                "MALFORMED_RESPONSE", f"the search backend's answer is not SearXNG JSON: {error}"
            ) from error
        return SearchResults(query, answers[0] if answers else None, hits)
