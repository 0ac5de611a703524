"""From a failed HTTP response (or an error object inside the stream) to an `LlmFailure` with a stable code.

Statuses are checked in spec §5's order: 401/403 `AUTH`; 413 `INVALID_REQUEST`; quota wording (or 402) `QUOTA`;
429 `RATE_LIMIT`; 400 with context-overflow wording `CONTEXT_WINDOW_EXCEEDED`, else `INVALID_REQUEST`; >= 500
`SERVER`; anything else `HTTP_<status>`. The wording checked is the provider's `error.code`, `error.type` and
message together (OpenAI says `insufficient_quota` in `code`, not in the message). The failure keeps the status,
`Retry-After` (seconds or an HTTP date, positive only; `retry-after-ms` too) and the request id (the first of
`REQUEST_ID_HEADERS` the server sent).

An error object inside a 200 stream (`{"error": {...}}`, as vLLM and LiteLLM's proxy send one when the upstream
fails mid-answer) is coded the same way: its `code` as an HTTP status whether it is an integer or a string of
digits (`429`, `"429"`), else a named `code` or `type` (`rate_limit_error`, `context_length_exceeded`,
`invalid_api_key`, `insufficient_quota`, `server_error`, ...; `ERROR_NAMES`), else the wording, else `SERVER`. A
specific name wins over a status (`"code": "400", "type": "context_length_exceeded"` is an overflow).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from email.utils import parsedate_to_datetime
from typing import Any

import msgspec

from dsh.runtime.llm import FailureCode, LlmFailure

__all__ = [
    "ERROR_NAMES",
    "REQUEST_ID_HEADERS",
    "failure_from_response",
    "failure_from_stream_error",
    "http_error_code",
    "request_id",
    "retry_after_ms",
    "stream_error_code",
]

_QUOTA = re.compile(r"quota|insufficient[ _]balance|billing|credit balance|out of credits", re.IGNORECASE)
_OVERFLOW = re.compile(
    r"context[ _](length|window)|maximum context|prompt is too long|too many tokens|"
    r"exceeds? the (model'?s )?(maximum|context)|reduce the length",
    re.IGNORECASE,
)


REQUEST_ID_HEADERS = (
    "x-request-id",
    "request-id",
    "openai-request-id",
    "x-litellm-call-id",
    "x-deepseek-request-id",
    "x-amzn-requestid",
    "x-amz-request-id",
    "cf-ray",
)
"""The response headers that name a request, most specific first: OpenAI and most gateways send `x-request-id`,
Anthropic-style servers `request-id`, LiteLLM's proxy `x-litellm-call-id`; `cf-ray` (Cloudflare's id of the hop)
is the last resort, still what a provider's support asks for."""

ERROR_NAMES: dict[str, str] = {
    **dict.fromkeys(
        (
            "rate_limit_error",
            "rate_limit_exceeded",
            "rate_limited",
            "throttling_error",
            "too_many_requests",
            "requests",
            "tokens",
        ),
        FailureCode.RATE_LIMIT,
    ),
    **dict.fromkeys(
        (
            "insufficient_quota",
            "quota_exceeded",
            "billing_hard_limit_reached",
            "billing_not_active",
            "insufficient_balance",
            "budget_exceeded",
        ),
        FailureCode.QUOTA,
    ),
    **dict.fromkeys(
        (
            "invalid_api_key",
            "authentication_error",
            "auth_error",
            "unauthorized",
            "invalid_authentication",
            "permission_error",
            "permission_denied",
            "forbidden",
            "no_access",
        ),
        FailureCode.AUTH,
    ),
    **dict.fromkeys(
        (
            "context_length_exceeded",
            "context_window_exceeded",
            "string_above_max_length",
            "request_too_large",
            "prompt_too_long",
        ),
        FailureCode.CONTEXT_WINDOW_EXCEEDED,
    ),
    **dict.fromkeys(
        (
            "server_error",
            "internal_error",
            "internal_server_error",
            "api_error",
            "overloaded_error",
            "overloaded",
            "service_unavailable",
            "service_unavailable_error",
            "bad_gateway",
            "engine_overloaded",
        ),
        FailureCode.SERVER,
    ),
    **dict.fromkeys(("timeout", "timeout_error", "request_timeout"), FailureCode.TIMEOUT),
    **dict.fromkeys(
        ("invalid_request_error", "bad_request", "bad_request_error"), FailureCode.INVALID_REQUEST
    ),
}
"""Named error `code`s and `type`s (lower case) to dsh's failure codes. `INVALID_REQUEST` names are generic: they
decide only when no status does, and overflow or quota wording in the message still wins over them."""


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


def request_id(headers: Mapping[str, str]) -> str | None:
    """The first non-empty `REQUEST_ID_HEADERS` value of a response."""
    for name in REQUEST_ID_HEADERS:
        value = headers.get(name)
        if value and value.strip():
            return value.strip()
    return None


def _body_error(body: bytes) -> tuple[str, str]:
    """The provider's `error.message` (or `message`, or `detail`), else the body's text, shortened; and the
    error's `code` and `type` as words, for the classification."""
    try:
        decoded: Any = msgspec.json.decode(body)
    except msgspec.DecodeError:
        decoded = None
    if isinstance(decoded, dict):
        error = decoded.get("error")
        if isinstance(error, dict):
            words = " ".join(str(error[k]) for k in ("code", "type") if isinstance(error.get(k), str | int))
            if isinstance(error.get("message"), str):
                return str(error["message"]), words
        for key in ("error", "message", "detail"):
            if isinstance(decoded.get(key), str):
                return str(decoded[key]), ""
    text = body.decode("utf-8", "replace").strip()
    return text[:500] + ("..." if len(text) > 500 else ""), ""


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
    message, words = _body_error(body)
    detail = redact(message)
    return LlmFailure(
        message=f'provider "{provider}" answered HTTP {status}' + (f": {detail}" if detail else ""),
        code=http_error_code(status, f"{words} {detail}"),
        status=status,
        provider_retry_after_ms=retry_after_ms(headers, now),
        request_id=request_id(headers),
    )


def _status_of(value: Any) -> int | None:
    """An HTTP status given as an integer or a string of digits (`429`, `"429"`), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    return value if isinstance(value, int) and 400 <= value <= 599 else None


def _named(value: Any) -> str | None:
    return ERROR_NAMES.get(value.strip().lower()) if isinstance(value, str) else None


def stream_error_code(error: Any, message: str) -> tuple[str, int | None]:
    """The failure code and HTTP status of an error object sent mid-stream (see the module)."""
    fields = error if isinstance(error, dict) else {}
    status = next(
        (
            s
            for s in map(_status_of, (fields.get(k) for k in ("code", "status", "status_code")))
            if s is not None
        ),
        None,
    )
    names = [_named(fields.get("code")), _named(fields.get("type"))]
    words = " ".join(str(fields[k]) for k in ("code", "type") if isinstance(fields.get(k), str))
    specific = next((n for n in names if n is not None and n != FailureCode.INVALID_REQUEST), None)
    if specific is not None:
        return specific, status
    if status is not None:
        return http_error_code(status, f"{words} {message}"), status
    if _QUOTA.search(words) or _QUOTA.search(message):
        return FailureCode.QUOTA, None
    if _OVERFLOW.search(message):
        return FailureCode.CONTEXT_WINDOW_EXCEEDED, None
    if FailureCode.INVALID_REQUEST in names:
        return FailureCode.INVALID_REQUEST, None
    return FailureCode.SERVER, None


def failure_from_stream_error(error: Any, *, request: str | None = None) -> LlmFailure:
    """An `{"error": ...}` object sent inside a 200 stream (vLLM, LiteLLM's proxy): coded as the module says;
    `request` is the response's request id."""
    message = error.get("message") if isinstance(error, dict) else None
    if not isinstance(message, str):
        message = str(error)
    code, status = stream_error_code(error, message)
    return LlmFailure(
        message=f"the provider reported an error mid-stream: {message}",
        code=code,
        status=status,
        request_id=request,
    )
