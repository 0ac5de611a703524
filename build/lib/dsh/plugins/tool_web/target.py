"""Where one web_fetch hop may connect: the URL parsed once (by the parser the HTTP client uses, so the check and the
request cannot read a URL differently), its host resolved once, every address checked, and the address to pin.

A non-public address is refused in every spelling: plain, and the IPv6 forms that carry an IPv4 address
(IPv4-mapped `::ffff:a.b.c.d`, IPv4-compatible `::a.b.c.d`, NAT64 `64:ff9b::/96` and `64:ff9b:1::/48`, 6to4
`2002::/16`, Teredo `2001::/32`), where the embedded IPv4 address must be public too."""

from __future__ import annotations

import ipaddress
import re
import socket
from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio

from .errors import FetchError

if TYPE_CHECKING:  # httpx (~40 ms) is imported when a URL is first parsed, not when its plugin loads
    import httpx

__all__ = ["Target", "embedded_ipv4", "is_public", "parse_url", "resolve"]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_NAT64 = (ipaddress.IPv6Network("64:ff9b::/96"), ipaddress.IPv6Network("64:ff9b:1::/48"))
_COMPATIBLE = ipaddress.IPv6Network("::/96")
_LABEL = re.compile(r"(?!-)[A-Za-z0-9_-]{1,63}(?<!-)")


@dataclass(frozen=True)
class Target:
    """A parsed hop: the URL as given, the host name as sent (Host header and TLS server name) and the port."""

    url: httpx.URL
    host: str
    port: int

    @property
    def is_ip_literal(self) -> bool:
        return _ip_literal(self.host) is not None


def parse_url(text: str) -> Target:
    """`text` as an http(s) URL with a well-formed host and port, or `INVALID_URL` / `UNSUPPORTED_SCHEME`."""
    import httpx

    try:
        url = httpx.URL(text)
    except (httpx.InvalidURL, ValueError, UnicodeError) as error:  # IDNA errors are UnicodeErrors
        raise FetchError("INVALID_URL", f"{text!r} is not a valid URL: {error}") from error
    if not url.scheme:
        raise FetchError("INVALID_URL", f"{text!r} is not an absolute URL (scheme://host/path)")
    if url.scheme not in ("http", "https"):
        raise FetchError("UNSUPPORTED_SCHEME", f"only http and https URLs can be fetched, not {text!r}")
    host = url.raw_host.decode("ascii", "replace")
    if not host:
        raise FetchError("INVALID_URL", f"{text!r} has no host")
    if _ip_literal(host) is None and not _is_host_name(host):
        raise FetchError(
            "INVALID_URL",
            f"{text!r} has an invalid host {host!r}: use a DNS name (letters, digits, '-', dot-separated labels of "
            "at most 63 characters) or an IP address",
        )
    port = url.port if url.port is not None else (443 if url.scheme == "https" else 80)
    if not 1 <= port <= 65535:
        raise FetchError("INVALID_URL", f"{text!r} has port {port}; a port is 1-65535")
    return Target(url, host, port)


def _is_host_name(host: str) -> bool:
    name = host[:-1] if host.endswith(".") else host
    return 0 < len(name) <= 253 and all(_LABEL.fullmatch(label) for label in name.split("."))


def _ip_literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host.replace("%25", "%"))
    except ValueError:
        return None


def embedded_ipv4(address: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries (mapped, compatible, NAT64, 6to4, Teredo client), if any."""
    if isinstance(address, ipaddress.IPv4Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    low = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address in _COMPATIBLE and int(address) > 1:  # `::` and `::1` are themselves, not IPv4 addresses
        return low
    if any(address in network for network in _NAT64):
        return low
    return None


def is_public(address: IPAddress) -> bool:
    """Globally reachable, and so is any IPv4 address it embeds."""
    if not address.is_global:
        return False
    inner = embedded_ipv4(address)
    return inner is None or inner.is_global


async def resolve(target: Target, *, allow_private: bool) -> str:
    """The one address this hop connects to: the host resolved once; every address it resolves to must be public
    (unless `allow_private`), and the first is pinned for the connection."""
    literal = _ip_literal(target.host)
    if literal is not None:
        addresses: list[IPAddress] = [literal]
    else:
        try:
            infos = await anyio.getaddrinfo(target.host, target.port, type=socket.SOCK_STREAM)
        except OSError as error:
            raise FetchError("DNS", f"cannot resolve {target.host}: {error}") from error
        addresses = [ipaddress.ip_address(info[4][0]) for info in infos]
        if not addresses:
            raise FetchError("DNS", f"cannot resolve {target.host}: no addresses")
    if not allow_private:
        for address in addresses:
            if not is_public(address):
                inner = embedded_ipv4(address)
                spelled = f"{address} (which embeds {inner})" if inner is not None else str(address)
                raise FetchError(
                    "BLOCKED_ADDRESS",
                    f"{target.host} resolves to {spelled}, a non-public address; fetching private, loopback and "
                    "link-local addresses is disabled (config allow_private_networks)",
                )
    return str(addresses[0])
