"""The `web_fetch` and `web_search` tool plugin."""

from .errors import FetchError as FetchError
from .fetch import html_to_text as html_to_text
from .search import SearchBackend as SearchBackend
from .search import SearchHit as SearchHit
from .search import SearchResults as SearchResults
from .search import SearxngBackend as SearxngBackend
from .tools import FETCH_SECTION as FETCH_SECTION
from .tools import SEARCH_SECTION as SEARCH_SECTION
from .tools import SearchConfig as SearchConfig
from .tools import WebConfig as WebConfig
from .tools import plugin as plugin

__all__ = [
    "FETCH_SECTION",
    "SEARCH_SECTION",
    "FetchError",
    "SearchBackend",
    "SearchConfig",
    "SearchHit",
    "SearchResults",
    "SearxngBackend",
    "WebConfig",
    "html_to_text",
    "plugin",
]
