"""Wire replay: the recording served as the provider's wire format by a local HTTP server, and the deployment's real
adapter (its request building, its HTTP client, its stream parsing) talking to it.

`wire_replay_plugin(transport, config)` is the replay plugin for a deployment whose live transport declares a wire
format (dsh.runtime.llm's `WireTransport`): it starts a `WireServer` on 127.0.0.1 (an ephemeral port; stopped when
the deployment unloads, whatever the run's outcome) and registers a `WireAdapter` under the replayed providers. Each
call claims its recorded entry by (turn, step, attempt) as chunk replay does, then builds the transport's real
adapter pointed at `{server}/c/{token}`, so the server knows which entry the request is for.

The server checks each request for what holds whatever the prompt says (`request_problems`: the model and settings
the agent asked for, the tools the recording calls at that step among those offered, the roles in the order the
provider accepts) and answers the entry as the provider would (replay/driver/_wire_sse.py). The adapter's answer is then
compared with the recording: the blocks it assembled (kinds, ids, names, text), the usage and the finish, or for a
recorded failure its code and the provider's message. A difference is a `ReplayMismatch` naming the call and what
differed. What the run logs is the recording's chunks, released as the adapter's answer reaches them, so a wire
replay logs what a chunk replay logs: the goldens are the same.
"""

from __future__ import annotations

import secrets
import select
import threading
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import anyio
import msgspec

from dsh.runtime.kernel import Context, Plugin
from dsh.runtime.llm import (
    LLM,
    BlockEnd,
    BlockStart,
    Finish,
    FinishError,
    LlmCallError,
    LlmFailure,
    LlmRequest,
    ReasoningBlock,
    ReasoningDelta,
    StreamChunk,
    TextBlock,
    TextDelta,
    ToolCallBlock,
    ToolCallDelta,
    UsageChunk,
    WireTransport,
)
from dsh.runtime.session import STORE

from ..recordings._errors import ReplayMismatch, format_call
from ..script._script import Hang, ScriptEntry, Throw
from ._adapter import ReplayAdapter, called_tools, hang
from ._plugin import REPLAY, ReplayConfig, apply_replay
from ._wire_sse import EXACT_CODES, WireReply, wire_reply

__all__ = ["API_KEY", "WireAdapter", "WireServer", "request_problems", "wire_replay_plugin"]

API_KEY = "dsh-wire-replay"
"""The credential the real adapter is given in a wire replay (no real key is read, none is needed)."""

STOP_TIMEOUT = 5.0
"""Seconds the server's stop waits for its thread before giving up on it (a daemon thread, gone with the process)."""

_POLL = 0.05


# -- the checks on a request ---------------------------------------------------------------------------------


def _settings(request: LlmRequest) -> dict[str, Any]:
    """The body fields the agent's call settings ask for, as chat completions spells them."""
    config = request.config
    wanted: dict[str, Any] = {"model": request.model, "stream": True}
    if config.temperature is not None:
        wanted["temperature"] = config.temperature
    if config.max_tokens is not None:
        wanted["max_tokens"] = config.max_tokens
    if config.stop:
        wanted["stop"] = list(config.stop)
    effort = config.reasoning_effort
    if effort == "off":
        wanted["thinking"] = {"type": "disabled"}
    elif effort is not None:
        wanted["reasoning_effort"] = effort
    return wanted


def _roles(messages: list[Any], system: str) -> list[str]:
    problems: list[str] = []
    pending: list[str] = []
    previous: str | None = None
    for position, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        where = f"message {position} ({role})"
        if role == "system":
            if position != 0:
                problems.append(f"{where}: a system message only opens the conversation")
            elif system and message.get("content") != system:
                problems.append(f"{where}: the system prompt is not the one the agent assembled")
        elif role == "tool":
            call = message.get("tool_call_id")
            if call not in pending:
                problems.append(
                    f"{where}: answers tool call {call!r}, which no preceding assistant message left open"
                )
            else:
                pending.remove(call)
        elif role in ("user", "assistant"):
            if pending:
                problems.append(f"{where}: comes before tool call(s) {', '.join(pending)} were answered")
                pending = []
            if role == "assistant":
                if previous in (None, "system"):
                    problems.append(f"{where}: the conversation must open with a user message")
                if previous == "assistant":
                    problems.append(f"{where}: follows another assistant message (roles must alternate)")
                pending = [call.get("id") for call in message.get("tool_calls") or ()]
        else:
            problems.append(f"{where}: unknown role; valid: system, user, assistant, tool")
        previous = role
    if not any(isinstance(m, dict) and m.get("role") == "user" for m in messages):
        problems.append("the request holds no user message")
    return problems


def request_problems(body: Any, request: LlmRequest, called: list[str]) -> list[str]:
    """What is wrong with the chat-completions `body` the adapter sent for `request`, whose recorded answer calls the
    tools `called`: only what holds whatever the prompt says."""
    if not isinstance(body, dict):
        return ["the body is not a JSON object"]
    problems = [
        f"{name} is {body.get(name)!r} where the agent asked for {value!r}"
        for name, value in _settings(request).items()
        if body.get(name) != value
    ]
    tools = body.get("tools") or []
    offered = [
        tool.get("function", {}).get("name")
        for tool in tools
        if isinstance(tool, dict) and tool.get("type") == "function"
    ]
    if len(offered) != len(tools):
        problems.append("a tool is not a {type: function, function: {...}} object")
    asked = [tool.name for tool in request.tools]
    if sorted(filter(None, offered)) != sorted(asked):
        problems.append(
            f"offers tools {sorted(filter(None, offered))} where the agent offered {sorted(asked)}"
        )
    missing = [name for name in called if name not in offered]
    if missing:
        problems.append(f"does not offer {', '.join(missing)}, which the recording calls at this step")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        problems.append("holds no messages")
    else:
        problems += _roles(messages, request.system)
    return problems


# -- the server ----------------------------------------------------------------------------------------------


@dataclass
class _Call:
    """One claimed call: what the server answers and what it found wrong with the request."""

    request: LlmRequest
    entry: ScriptEntry
    reply: WireReply
    problems: list[str] = field(default_factory=list)
    received: bool = False


class WireServer:
    """The provider, on 127.0.0.1 at an ephemeral port: `POST /c/{token}/chat/completions` answers the call
    `expect` registered under `token`. `start` returns once it listens; `stop` ends it and every open stream."""

    def __init__(self) -> None:
        self._calls: dict[str, _Call] = {}
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # http.server's naming
                server._answer(self)

            def log_message(self, format: str, *args: Any) -> None:  # http.server's signature
                """Requests are not logged: a failure reaches the run as a divergence."""

        self._http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._http.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._http.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> WireServer:
        self._thread = threading.Thread(
            target=self._http.serve_forever, kwargs={"poll_interval": _POLL}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._http.shutdown()
            self._thread.join(STOP_TIMEOUT)
        self._http.server_close()

    def expect(self, call: _Call) -> str:
        token = secrets.token_hex(8)
        with self._lock:
            self._calls[token] = call
        return token

    def forget(self, token: str) -> None:
        with self._lock:
            self._calls.pop(token, None)

    def _answer(self, handler: BaseHTTPRequestHandler) -> None:
        parts = handler.path.strip("/").split("/")
        with self._lock:
            call = self._calls.get(parts[1]) if len(parts) == 4 and parts[0] == "c" else None
        length = int(handler.headers.get("content-length") or 0)
        raw = handler.rfile.read(length)
        if call is None or parts[2:] != ["chat", "completions"]:
            self._send(handler, 404, {}, b'{"error":{"message":"no such call","type":"not_found"}}')
            return
        call.received = True
        try:
            body = msgspec.json.decode(raw)
        except msgspec.DecodeError as error:
            body = None
            call.problems.append(f"the body is not JSON: {error}")
        if body is not None:
            call.problems += request_problems(body, call.request, called_tools(call.entry.chunks))
        if handler.headers.get("authorization") not in (None, f"Bearer {API_KEY}"):
            call.problems.append("the Authorization header does not carry the route's key")
        if call.problems:
            message = "wire replay: the request differs from what the provider accepts: " + "; ".join(
                call.problems
            )
            answer = msgspec.json.encode({"error": {"message": message, "type": "invalid_request_error"}})
            self._send(handler, 400, {}, answer)
            return
        reply = call.reply
        if reply.status != 200:
            self._send(handler, reply.status, reply.headers, reply.body)
            return
        handler.send_response(200)
        for name, value in {"content-type": "text/event-stream", **reply.headers}.items():
            handler.send_header(name, value)
        handler.end_headers()
        try:
            for frame in reply.sse():
                handler.wfile.write(frame)
                handler.wfile.flush()
            if reply.hang:
                self._hold(handler)
        except (BrokenPipeError, ConnectionResetError):
            return  # the client left (a cancelled call): nothing more to send

    def _hold(self, handler: BaseHTTPRequestHandler) -> None:
        """Keep a hanging answer open until the client closes it or the server stops."""
        while not self._stopping.is_set():
            readable, _, _ = select.select([handler.connection], [], [], _POLL)
            if readable and not handler.connection.recv(1, 0):
                return

    @staticmethod
    def _send(handler: BaseHTTPRequestHandler, status: int, headers: dict[str, str], body: bytes) -> None:
        handler.send_response(status)
        for name, value in {"content-type": "application/json", **headers}.items():
            handler.send_header(name, value)
        handler.send_header("content-length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)


# -- the answer compared -------------------------------------------------------------------------------------


class _Fold:
    """What a stream has said so far: per block index its kind, id, name, the text its deltas streamed (a block
    ended with no delta counts as streamed whole) and the text it ended with; its usage and its finish."""

    __slots__ = ("blocks", "finish", "usage")

    def __init__(self) -> None:
        self.blocks: dict[int, list[Any]] = {}
        self.usage: Any = None
        self.finish: tuple[str, str | None] | None = None

    def _block(self, index: int, kind: str) -> list[Any]:
        return self.blocks.setdefault(index, [kind, None, None, "", None, False])

    def feed(self, chunk: StreamChunk) -> None:
        if isinstance(chunk, BlockStart):
            self._block(chunk.index, chunk.block_type)
        elif isinstance(chunk, TextDelta | ReasoningDelta):
            block = self._block(chunk.index, "text" if isinstance(chunk, TextDelta) else "reasoning")
            block[3] += chunk.text
            block[5] = True
        elif isinstance(chunk, ToolCallDelta):
            block = self._block(chunk.index, "tool-call")
            block[1] = block[1] or chunk.id
            block[2] = block[2] or chunk.name
            block[3] += chunk.arguments_delta
            block[5] = True
        elif isinstance(chunk, BlockEnd):
            done = chunk.block
            text = done.arguments if isinstance(done, ToolCallBlock) else getattr(done, "text", "")
            kind = {ToolCallBlock: "tool-call", TextBlock: "text", ReasoningBlock: "reasoning"}.get(
                type(done), ""
            )
            block = self._block(chunk.index, kind)
            if isinstance(done, ToolCallBlock):
                block[1], block[2] = done.id, done.name
            if not block[5]:
                block[3] = text
            block[4] = text
        elif isinstance(chunk, UsageChunk):
            self.usage = chunk.usage
        elif isinstance(chunk, Finish):
            reason = chunk.reason
            self.finish = (
                type(reason).__name__,
                reason.failure.code if isinstance(reason, FinishError) else None,
            )

    def state(self) -> tuple[Any, ...]:
        """What must agree with the recording: the text a block ended with is not compared (a stream the provider
        cut off leaves a block the recording never ended, which the adapter ends at `[DONE]`), what it streamed is."""
        blocks = tuple((i, *block[:4]) for i, block in sorted(self.blocks.items()))
        return (blocks, self.usage, self.finish)


def _states(chunks: tuple[StreamChunk, ...]) -> list[tuple[Any, ...]]:
    fold = _Fold()
    states = [fold.state()]
    for chunk in chunks:
        fold.feed(chunk)
        states.append(fold.state())
    return states


def _difference(recorded: tuple[Any, ...], live: tuple[Any, ...]) -> str:
    names = ("blocks", "usage", "finish")
    for name, want, got in zip(names, recorded, live, strict=True):
        if want != got:
            return f"its {name} are {got!r} where the recording has {want!r}"
    return "it stopped before the recorded answer ended"


def _failure_difference(live: LlmFailure, recorded: LlmFailure) -> str | None:
    if recorded.code not in EXACT_CODES:
        return None  # dsh's own failure (a timeout, a protocol error): served as a stream cut short, any failure stands
    if live.code != recorded.code:
        return f"the adapter reports {live.code} ({live.message}) where the recording failed {recorded.code}"
    if recorded.code != "EMPTY_RESPONSE" and recorded.message not in live.message:
        return f"the adapter's failure {live.message!r} lost the provider's message {recorded.message!r}"
    if recorded.status is not None and live.status != recorded.status:
        return f"the adapter reports HTTP status {live.status} where the recording has {recorded.status}"
    return None


class WireAdapter:
    """The adapter a wire replay registers: each call is claimed from `replay` and made through the real adapter
    `transport` builds for `config`, pointed at `server`."""

    def __init__(
        self, replay: ReplayAdapter, transport: WireTransport[Any], config: Any, server: WireServer
    ) -> None:
        self.replay = replay
        self.transport = transport
        self.config = config
        self.server = server

    def context_window(self, provider: str, model: str) -> int | None:
        return self.replay.context_window(provider, model)

    def _diverged(self, request: LlmRequest, entry: ScriptEntry, what: str) -> ReplayMismatch:
        asked = f"wire call {format_call(request.call)} of live session {request.session_id!r}"
        error = ReplayMismatch(
            f"replay mismatch: {asked}: {what}",
            session_id=request.session_id,
            log=None,
            call=request.call,
            recorded=entry.describe(),
            asked=asked,
        )
        self.replay.report(error)
        return error

    async def stream(self, request: LlmRequest) -> AsyncGenerator[StreamChunk, None]:
        cwd, entry, recorded = self.replay.claim(request)
        end = entry.end
        thrown = LlmFailure(message=end.message, code=end.code) if isinstance(end, Throw) else None
        call = _Call(request, entry, wire_reply(recorded, failure=thrown, hang=isinstance(end, Hang)))
        token = self.server.expect(call)
        try:
            real = self.transport.pointed_at(
                self.config, request.provider, f"{self.server.url}/c/{token}", API_KEY
            )
            states = _states(recorded)
            released = 0
            live = _Fold()
            answer = aiter(real.stream(request))
            try:
                try:
                    while True:
                        if released == len(recorded) and isinstance(end, Hang):
                            await self._hang(request, call, answer, end, cwd)
                            return
                        try:
                            chunk = await anext(answer)
                        except StopAsyncIteration:
                            break
                        live.feed(chunk)
                        state = live.state()
                        reached = next(
                            (k for k in range(len(recorded), released, -1) if states[k] == state), released
                        )
                        for kept in recorded[released:reached]:
                            yield kept
                        released = reached
                except Exception as error:  # any failure of the adapter is judged against the recording
                    failure = (
                        error.failure
                        if isinstance(error, LlmCallError)
                        else LlmFailure(message=f"{type(error).__name__}: {error}", code="UNKNOWN")
                    )
                    if call.problems or not call.received:
                        raise self._request_divergence(request, entry, call, failure) from None
                    expected = thrown or _recorded_failure(recorded)
                    if expected is None:
                        raise self._diverged(
                            request,
                            entry,
                            f"the adapter failed ({failure.code}: {failure.message}) where the recording answered",
                        ) from None
                    problem = _failure_difference(failure, expected)
                    if problem is not None:
                        raise self._diverged(request, entry, problem) from None
                    for kept in recorded[released:]:
                        yield kept
                    if thrown is not None:
                        raise LlmCallError(thrown) from None
                    return
            finally:
                aclose = getattr(answer, "aclose", None)
                if aclose is not None:
                    await aclose()
            if call.problems or not call.received:
                raise self._request_divergence(request, entry, call, None)
            if released < len(recorded) or live.state() != states[-1]:
                what = _difference(states[-1], live.state())
                raise self._diverged(
                    request, entry, f"the adapter's answer differs from the recording: {what}"
                )
        finally:
            self.server.forget(token)

    def _request_divergence(
        self, request: LlmRequest, entry: ScriptEntry, call: _Call, failure: LlmFailure | None
    ) -> ReplayMismatch:
        if not call.received:
            said = "" if failure is None else f" ({failure.code}: {failure.message})"
            return self._diverged(request, entry, f"the adapter sent no request to the provider{said}")
        return self._diverged(
            request, entry, "the request differs from what the provider accepts: " + "; ".join(call.problems)
        )

    async def _hang(
        self, request: LlmRequest, call: _Call, answer: AsyncIterator[StreamChunk], end: Hang, cwd: str | None
    ) -> None:
        """The recorded answer was cut off here: the adapter waits on the open stream while the hang holds. An
        adapter that fails meanwhile (its request refused, the stream misread) ends the hang as a divergence."""
        failed: list[Exception] = []

        async def drain(scope: anyio.CancelScope) -> None:
            try:
                async for _ in answer:
                    pass
            except Exception as error:  # judged below, outside the task group
                failed.append(error)
                scope.cancel()

        async with anyio.create_task_group() as group:
            group.start_soon(drain, group.cancel_scope)
            await hang(end, cwd)
        if failed:
            error = failed[0]
            failure = error.failure if isinstance(error, LlmCallError) else None
            if call.problems or not call.received:
                raise self._request_divergence(request, call.entry, call, failure)
            said = f"{type(error).__name__}: {error}"
            raise self._diverged(request, call.entry, f"the adapter failed ({said}) where the recording hung")


def _recorded_failure(chunks: tuple[StreamChunk, ...]) -> LlmFailure | None:
    last = chunks[-1] if chunks else None
    if isinstance(last, Finish) and isinstance(last.reason, FinishError):
        return last.reason.failure
    return None


def wire_replay_plugin(transport: WireTransport[Any], config: Any) -> Plugin[ReplayConfig]:
    """The replay plugin serving the recording through `transport`'s real adapter (configured by `config`, the
    transport entry's config) and a local `WireServer`, stopped when the plugin unloads."""

    def apply(ctx: Context, replay: ReplayConfig) -> None:
        server = WireServer().start()
        ctx.effect(server.stop)
        apply_replay(ctx, replay, lambda adapter: WireAdapter(adapter, transport, config, server))

    return Plugin(
        name="replay",
        apply=apply,
        config=ReplayConfig,
        needs=(LLM, STORE),
        provides=(REPLAY, *_replay_provides()),
        description=f"replays a recording through the real {transport.plugin.name} adapter over its wire format",
    )


def _replay_provides() -> tuple[Any, ...]:
    from ._plugin import plugin

    return tuple(key for key in plugin.provides if key is not REPLAY)
