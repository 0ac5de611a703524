"""web_fetch's address policy against a local server that counts its requests: every spelling of a non-public
address is refused before a connection is made, each hop resolves its host once and connects to the address it
checked (Host kept), and every malformed URL is INVALID_URL."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import pytest

from dsh.plugins.tool_web import plugin
from dsh.runtime.kernel import Context
from dsh.runtime.llm import CallId, ToolCallBlock
from dsh.runtime.tools import TOOLS, ToolContext, ToolResult

from ..tool_host import tool_host

pytestmark = pytest.mark.anyio


class Counting(ThreadingHTTPServer):
    hits: list[str]


class Handler(BaseHTTPRequestHandler):
    server: Counting

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the tests read the hit list, not the server's log."""

    def do_GET(self) -> None:
        self.server.hits.append(self.path)
        if self.path == "/bad-redirect":
            self.send_response(302)
            self.send_header("Location", "http://[::1")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = json.dumps({"host": self.headers["Host"], "path": self.path}).encode()
        self.send_response(200)
        charset = "; charset=x-no-such-charset" if self.path == "/odd-charset" else ""
        self.send_header("Content-Type", "application/json" + charset)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="module")
def running() -> Iterator[Counting]:
    httpd = Counting(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield httpd
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


@pytest.fixture
def server(running: Counting) -> Counting:
    """The module's server with an empty hit list."""
    running.hits = []
    return running


def port(server: Counting) -> int:
    return int(server.server_address[1])


def host(**config: Any) -> Context:
    ctx = tool_host()
    ctx.plugin(plugin, config)
    return ctx


async def fetch(url: str, **config: Any) -> ToolResult:
    ctx = host(**config)
    return await ctx.get(TOOLS).execute(
        ToolCallBlock(CallId("c1"), "web_fetch", json.dumps({"url": url})), ToolContext(ctx, Path.cwd(), "c1")
    )


# Each host names the test server's loopback address (or another non-public one) in a different spelling.
BLOCKED_HOSTS = [
    "127.0.0.1",
    "localhost",
    "2130706433",  # 127.0.0.1 as one decimal number
    "0x7f.0.0.1",  # and with a hexadecimal first part
    "127.1",  # short form
    "example.com@127.0.0.1",  # a user name that looks like a host
    "0.0.0.0",
    "[::1]",
    "[::127.0.0.1]",  # IPv4-compatible
    "[::ffff:127.0.0.1]",  # IPv4-mapped
    "[::ffff:7f00:1]",
    "[64:ff9b::7f00:1]",  # NAT64 of loopback
    "[64:ff9b::a9fe:a9fe]",  # NAT64 of the cloud metadata address 169.254.169.254
    "[64:ff9b:1::a00:1]",  # local-use NAT64 of 10.0.0.1
    "[2002:7f00:1::]",  # 6to4 of loopback
    "[2002:a9fe:a9fe::1]",  # 6to4 of 169.254.169.254
    "[2001:0:4136:e378:8000:63bf:80ff:fffe]",  # Teredo, client 127.0.0.1
    "[fe80::1]",
    "[fc00::1]",
]


@pytest.mark.parametrize("name", BLOCKED_HOSTS)
async def test_every_spelling_of_a_non_public_address_is_refused(server: Counting, name: str) -> None:
    result = await fetch(f"http://{name}:{port(server)}/secret")
    assert (result.is_error, result.code) == (True, "BLOCKED_ADDRESS"), result.text
    assert "a non-public address" in result.text
    assert server.hits == []


async def test_an_embedded_address_is_named_in_the_refusal(server: Counting) -> None:
    result = await fetch(f"http://[64:ff9b::a9fe:a9fe]:{port(server)}/")
    assert result.text.startswith(
        "64:ff9b::a9fe:a9fe resolves to 64:ff9b::a9fe:a9fe (which embeds 169.254.169.254), a non-public address"
    )


def fake_dns(monkeypatch: pytest.MonkeyPatch, answers: dict[str, list[str]]) -> list[str]:
    """Answer `socket.getaddrinfo` for the names in `answers` (each call pops the next address); log each lookup."""
    lookups: list[str] = []
    real = socket.getaddrinfo

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else host
        if name not in answers:
            return real(host, port, *args, **kwargs)
        lookups.append(name)
        address = answers[name].pop(0)
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        return [(family, socket.SOCK_STREAM, 6, "", (address, int(port)))]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return lookups


async def test_a_hop_resolves_once_and_connects_to_the_checked_address(
    server: Counting, monkeypatch: pytest.MonkeyPatch
) -> None:
    # DNS rebinding: the first answer is public (and passes the check), any later one is the loopback server.
    lookups = fake_dns(monkeypatch, {"rebind.test": ["93.184.215.14", "127.0.0.1", "127.0.0.1"]})
    connected: list[str] = []

    async def connect_tcp(remote_host: str, remote_port: int, **kwargs: Any) -> Any:
        connected.append(remote_host)
        raise OSError("the test allows no connection beyond loopback")

    monkeypatch.setattr(anyio, "connect_tcp", connect_tcp)
    result = await fetch(f"http://rebind.test:{port(server)}/secret")
    assert result.code == "TRANSPORT"
    assert lookups == ["rebind.test"]
    assert connected == ["93.184.215.14"]
    assert server.hits == []


async def test_the_pinned_connection_keeps_the_host_header(
    server: Counting, monkeypatch: pytest.MonkeyPatch
) -> None:
    lookups = fake_dns(monkeypatch, {"pinned.test": ["127.0.0.1"]})
    result = await fetch(f"http://pinned.test:{port(server)}/page", allow_private_networks=True)
    assert not result.is_error, result.text
    assert json.loads(result.text.split("\n\n", 1)[1]) == {
        "host": f"pinned.test:{port(server)}",
        "path": "/page",
    }
    assert result.meta["url"] == f"http://pinned.test:{port(server)}/page"
    assert lookups == ["pinned.test"]


MALFORMED = [
    "http://[::1",
    "http://example.com:99999/",
    "http://example.com:0/",
    "http://example.com:abc/",
    "http://exa mple.com/",
    "http://exa\tmple.com/",
    "http://\x00evil/",
    "http://",
    "http:///path",
    "http://a:b@/x",
    "http://" + "a" * 64 + ".com/",
    "http://a..b/",
    "http://-a-.com/",
    "http://%41.com/",
    "http://[v1.fe]/",
    "http://[1.2.3.4]/",
    "http://0177.0.0.1/",  # an octal part: an IPv4 address the parser refuses rather than guess
    "http://xn--/",
    "http://\u2100/",
    "not a url",
    "//example.com/path",
]


@pytest.mark.parametrize("url", MALFORMED)
async def test_a_malformed_url_is_invalid_url(url: str) -> None:
    result = await fetch(url)
    assert (result.is_error, result.code) == (True, "INVALID_URL"), result.text


async def test_a_malformed_redirect_is_invalid_url(server: Counting) -> None:
    result = await fetch(f"http://127.0.0.1:{port(server)}/bad-redirect", allow_private_networks=True)
    assert (result.code, server.hits) == ("INVALID_URL", ["/bad-redirect"])
    assert "redirected to 'http://[::1', which is not a valid URL" in result.text


def server_name(hello: bytes) -> str | None:
    """The SNI host name of a TLS ClientHello record."""
    at = 5 + 4 + 2 + 32  # record header, handshake header, version, random
    at += 1 + hello[at]  # session id
    at += 2 + int.from_bytes(hello[at : at + 2])  # cipher suites
    at += 1 + hello[at]  # compression methods
    end = at + 2 + int.from_bytes(hello[at : at + 2])
    at += 2
    while at < end:
        kind, size = int.from_bytes(hello[at : at + 2]), int.from_bytes(hello[at + 2 : at + 4])
        if kind == 0:  # server_name: list length (2), name type (1), name length (2), name
            return hello[at + 9 : at + 9 + int.from_bytes(hello[at + 7 : at + 9])].decode()
        at += 4 + size
    return None


async def test_the_pinned_tls_connection_sends_the_url_host_as_sni(monkeypatch: pytest.MonkeyPatch) -> None:
    # A server that reads the ClientHello and hangs up: no certificate needed to see what name the client asked for.
    hellos: list[bytes] = []
    listener = socket.create_server(("127.0.0.1", 0))

    def accept() -> None:
        connection, _ = listener.accept()
        with connection:
            hellos.append(connection.recv(65536))

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    lookups = fake_dns(monkeypatch, {"pinned.test": ["127.0.0.1"]})
    try:
        result = await fetch(f"https://pinned.test:{listener.getsockname()[1]}/", allow_private_networks=True)
    finally:
        thread.join(5)
        listener.close()
    assert result.code == "TRANSPORT"
    assert lookups == ["pinned.test"]
    assert [server_name(hello) for hello in hellos] == ["pinned.test"]


async def test_an_unknown_charset_is_read_as_utf8_not_a_tool_failure(server: Counting) -> None:
    result = await fetch(f"http://127.0.0.1:{port(server)}/odd-charset", allow_private_networks=True)
    assert not result.is_error, result.text
    assert '"path": "/odd-charset"' in result.text
