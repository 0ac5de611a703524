"""From a failed HTTP response (or an error object inside the stream) to an `LlmFailure` with a stable code.

Statuses are checked in spec §5's order: 401/403 `AUTH`; 413 `INVALID_REQUEST`; quota wording (or 402) `QUOTA`;
429 `RATE_LIMIT`; 400 with context-overflow wording `CONTEXT_WINDOW_EXCEEDED`, else `INVALID_REQUEST`; >= 500
`SERVER`; anything else `HTTP_<status>`. The failure keeps the status, `Retry-After` (seconds or an HTTP date,
positive only; `retry-after-ms` too) and the request id.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from email.utils import parsedate_to_datetime
from typing import Any

import msgspec

from dsh.runtime.llm import FailureCode, LlmFailure

__all__ = ["failure_from_response", "failure_from_stream_error", "http_error_code", "retry_after_ms"]

_QUOTA = re.compile(r"quota|insufficient[ _]balance|billing|credit balance|out of credits", re.IGNORECASE)
_OVERFLOW = re.compile(
    r"context[ _](length|window)|maximum context|prompt is too long|too many tokens|"
    r"exceeds? the (model'?s )?(maximum|context)|reduce the length",
    re.IGNORECASE,
)


def http_error_code(status: int, message: str) -> str:
    if status in (401, 403):
        return FailureCode.AUTH
    if status == 413:
        return FailureCode.INVALID_REQUEST
    if status == 402 or _QUOTA.search(message):
        return FailureCode.QUOTA
    if status == 429:
        return FailureCode.RATE_LIMIT
    if status == 400:
        return (
            FailureCode.CONTEXT_WINDOW_EXCEEDED if _OVERFLOW.search(message) else FailureCode.INVALID_REQUEST
        )
    if status >= 500:
        return FailureCode.SERVER
    return f"HTTP_{status}"


def retry_after_ms(headers: Mapping[str, str], now: Callable[[], float]) -> int | None:
    """`retry-after-ms`, else `Retry-After` as seconds or as an HTTP date (against `now()`, epoch seconds);
    only positive delays count."""
    raw_ms = headers.get("retry-after-ms")
    if raw_ms is not None:
        try:
            value = float(raw_ms)
        except ValueError:
            value = math.nan
        if math.isfinite(value) and value > 0:
            return math.ceil(value)
    raw = headers.get("retry-after")
    if raw is None:
        return None
    raw = raw.strip()
    try:
        seconds = float(raw)
    except ValueError:
        try:
            when = parsedate_to_datetime(raw)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            return None
        seconds = when.timestamp() - now()
    if not math.isfinite(seconds) or seconds <= 0:
        return None
    return math.ceil(seconds * 1000)


def _request_id(headers: Mapping[str, str]) -> str | None:
    return headers.get("x-request-id") or headers.get("x-deepseek-request-id")


def _body_message(body: bytes) -> str:
    """The provider's `error.message` (or `message`, or `detail`), else the body's text, shortened."""
    try:
        decoded: Any = msgspec.json.decode(body)
    except msgspec.DecodeError:
        decoded = None
    if isinstance(decoded, dict):
        error = decoded.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])
        for key in ("error", "message", "detail"):
            if isinstance(decoded.get(key), str):
                return str(decoded[key])
    text = body.decode("utf-8", "replace").strip()
    return text[:500] + ("..." if len(text) > 500 else "")


def failure_from_response(
    *,
    provider: str,
    status: int,
    headers: Mapping[str, str],
    body: bytes,
    now: Callable[[], float],
    redact: Callable[[str], str],
) -> LlmFailure:
    """The failure of a non-2xx response. `redact` removes the API key from provider text (some echo it)."""
    detail = redact(_body_message(body))
    return LlmFailure(
        message=f'provider "{provider}" answered HTTP {status}' + (f": {detail}" if detail else ""),
        code=http_error_code(status, detail),
        status=status,
        provider_retry_after_ms=retry_after_ms(headers, now),
        request_id=_request_id(headers),
    )


def failure_from_stream_error(error: Any) -> LlmFailure:
    """An `{"error": ...}` object sent inside a 200 stream (vLLM, proxies): coded by its numeric code if it has one,
    else `SERVER`."""
    message = error.get("message") if isinstance(error, dict) else None
    if not isinstance(message, str):
        message = str(error)
    code = error.get("code") if isinstance(error, dict) else None
    status = code if isinstance(code, int) and 400 <= code <= 599 else None
    return LlmFailure(
        message=f"the provider reported an error mid-stream: {message}",
        code=http_error_code(status, message) if status is not None else FailureCode.SERVER,
        status=status,
    )
