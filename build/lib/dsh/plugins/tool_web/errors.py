"""`FetchError`: a web_fetch or web_search call the tool refuses or that failed, with the stable code its error
result carries."""

from __future__ import annotations

__all__ = ["FetchError"]


class FetchError(Exception):
    """A fetch the tool refuses or that failed; `code` is stable and becomes the error result's code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
