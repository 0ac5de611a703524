"""Who may talk to `dsh web`: an access token (from the printed URL's `?token=`, turned into an HttpOnly cookie on the
first visit), a Host header naming this server (DNS rebinding), an Origin of this server on any state-changing
request (CSRF), and the headers every response carries (a Content-Security-Policy with no inline script)."""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from collections.abc import Iterable
from urllib.parse import urlencode

from starlette.datastructures import URL
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["COOKIE", "CSP", "Guard", "is_loopback", "new_token"]

COOKIE = "dsh_web_token"
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),  # no-referrer would make the browser send `Origin: null` on a POST
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
]
_SAFE = frozenset({"GET", "HEAD", "OPTIONS"})


def new_token() -> str:
    """A fresh access token: 32 random bytes, URL-safe."""
    return secrets.token_urlsafe(32)


def is_loopback(host: str) -> bool:
    """Whether `host` (a name or an address) is this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class Guard:
    """ASGI middleware in front of the app: checks Host, then the token (query or cookie), then Origin for a
    state-changing request, and adds the security headers to every response it lets through or makes."""

    def __init__(self, app: ASGIApp, *, token: str, hosts: Iterable[str]) -> None:
        self.app = app
        self.token = token
        self.hosts = frozenset(host.lower() for host in hosts)

    def _valid(self, given: str | None) -> bool:
        return given is not None and hmac.compare_digest(given.encode(), self.token.encode())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)

        async def secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *_HEADERS]
            await send(message)

        host = request.headers.get("host", "").lower()
        if host not in self.hosts:
            await PlainTextResponse(f"unknown Host {host!r}: dsh web answers only to its own address", 421)(
                scope, receive, secured
            )
            return
        given = request.query_params.get("token")
        if self._valid(given):  # the first visit: the token moves into a cookie and out of the address bar
            query = urlencode([(k, v) for k, v in request.query_params.multi_items() if k != "token"])
            target = URL(scope=scope).replace(query=query)
            response: Response = RedirectResponse(str(target.path) + (f"?{query}" if query else ""), 303)
            response.set_cookie(COOKIE, self.token, httponly=True, samesite="strict", path="/")
            await response(scope, receive, secured)
            return
        if not self._valid(request.cookies.get(COOKIE)):
            await PlainTextResponse(
                "401: open the address `dsh web` printed (it carries the access token)", 401
            )(scope, receive, secured)
            return
        if request.method not in _SAFE:
            origin = request.headers.get("origin")
            if origin is None or origin.split("://", 1)[-1].lower() not in self.hosts:
                await PlainTextResponse("403: a state-changing request must come from this page", 403)(
                    scope, receive, secured
                )
                return
        await self.app(scope, receive, secured)
