"""`OpenAICompatibleAdapter`: one configured route, streamed over httpx as chat-completions SSE.

One `stream()` call makes exactly one HTTP request and never retries (the retry policy owns that). Every failure is
raised as an `LlmCallError` with a stable code; `LlmRuntime` turns it into the terminal chunk. Cancellation
propagates untouched: the response and its connection are closed on the way out, so the server sees the call end.
The API key is read from the environment at call time and is redacted from every failure message. A failure after
the response arrived (a mid-stream error object, a dropped connection) carries the response's request id.
"""

from __future__ import annotations

import functools
import os
import ssl
import time
from collections.abc import AsyncGenerator, Callable, Mapping
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING

import msgspec

from dsh.runtime.llm import FailureCode, LlmCallError, LlmFailure, LlmRequest, StreamChunk

from ._config import ProviderConfig
from ._errors import failure_from_response, failure_from_stream_error, request_id
from ._mapping import ChunkMapper
from ._sse import SseDecoder, SseEventTooLarge
from ._wire import build_body, decode_wire_chunk

if TYPE_CHECKING:  # httpx (~40 ms) is imported when a route first calls, not when the plugin loads
    import httpx

__all__ = ["OpenAICompatibleAdapter"]

USER_AGENT = "dsh/0.1"
_ERROR_BODY_LIMIT = 64 * 1024
_encoder = msgspec.json.Encoder()


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """The verifying TLS context every adapter's client uses: loading the CA bundle costs ~25 ms of CPU, so it is
    done once per process, not once per adapter (wire replay builds an adapter per call). A context is shared
    safely: clients only read it."""
    import httpx

    return httpx.create_ssl_context()


def _fail(message: str, code: str) -> LlmCallError:
    return LlmCallError(LlmFailure(message=message, code=code))


class OpenAICompatibleAdapter:
    """Streams chat completions from `route`. `client` lets the caller share (and own) an `httpx.AsyncClient`;
    without it each call opens and closes its own, so nothing outlives a call. `env` and `now` are injectable for
    tests (the key's environment, and the clock that turns a `Retry-After` date into a delay)."""

    def __init__(
        self,
        route: ProviderConfig,
        *,
        client: httpx.AsyncClient | None = None,
        env: Mapping[str, str] | None = None,
        now: Callable[[], float] = time.time,
    ) -> None:
        self.route = route
        self.endpoint = route.base_url.rstrip("/") + "/chat/completions"
        self._client = client
        self._env = os.environ if env is None else env
        self._now = now

    def context_window(self, provider: str, model: str) -> int | None:
        """The route's configured window of `model` (`context_windows`, else `context_window`; None: unknown)."""
        return self.route.window(model)

    def _api_key(self) -> str | None:
        name = self.route.api_key_env
        if name is None:
            return None
        key = self._env.get(name, "").strip()
        if not key:
            raise _fail(
                f'provider "{self.route.id}" needs an API key: set the environment variable {name}',
                FailureCode.MISSING_CREDENTIAL,
            )
        return key

    def _new_client(self) -> httpx.AsyncClient:
        import httpx

        return httpx.AsyncClient(verify=_ssl_context(), timeout=self._timeout())

    def _timeout(self) -> httpx.Timeout:
        import httpx

        route = self.route
        return httpx.Timeout(
            connect=route.connect_timeout,
            read=route.idle_timeout,
            write=route.idle_timeout,
            pool=route.connect_timeout,
        )

    async def stream(self, request: LlmRequest) -> AsyncGenerator[StreamChunk, None]:
        key: str | None = None
        rid: str | None = None
        try:
            if self.route.models and request.model not in self.route.models:
                raise _fail(
                    f'provider "{self.route.id}" does not serve model "{request.model}"; '
                    f"configured models: {', '.join(self.route.models)}",
                    FailureCode.UNKNOWN_MODEL,
                )
            key = self._api_key()
            body = _encoder.encode(build_body(request))
            headers = {
                "accept": "text/event-stream",
                "content-type": "application/json",
                "user-agent": USER_AGENT,
                **self.route.headers,
            }
            if key is not None:
                headers["authorization"] = f"Bearer {key}"
            if request.session_id is not None:
                headers["x-dsh-session-id"] = request.session_id
            async with AsyncExitStack() as stack:
                client = self._client
                if client is None:
                    client = await stack.enter_async_context(self._new_client())
                response = await self._send(stack, client, body, headers)
                rid = request_id(response.headers)
                async for batch in self._batches(response, key):
                    for chunk in batch:
                        yield chunk
        except LlmCallError as error:
            failure = error.failure
            if key and key in failure.message:
                failure = msgspec.structs.replace(failure, message=failure.message.replace(key, "***"))
            if rid is not None and failure.request_id is None:
                failure = msgspec.structs.replace(failure, request_id=rid)
            if failure is not error.failure:
                raise LlmCallError(failure) from error.__cause__
            raise

    async def _send(
        self, stack: AsyncExitStack, client: httpx.AsyncClient, body: bytes, headers: dict[str, str]
    ) -> httpx.Response:
        import httpx

        try:
            return await stack.enter_async_context(
                client.stream("POST", self.endpoint, content=body, headers=headers, timeout=self._timeout())
            )
        except httpx.ReadTimeout as error:
            raise _fail(
                f"{self.endpoint} sent no response within {self.route.idle_timeout:g} s", FailureCode.TIMEOUT
            ) from error
        except httpx.TransportError as error:
            raise _fail(
                f"cannot reach {self.endpoint}: {type(error).__name__}: {error}", FailureCode.TRANSPORT
            ) from error

    async def _read_limited(self, response: httpx.Response) -> bytes:
        import httpx

        data = b""
        try:
            async for part in response.aiter_bytes():
                data += part
                if len(data) >= _ERROR_BODY_LIMIT:
                    break
        except httpx.TransportError:
            # The status already says the call failed; a body cut short only shortens the message.
            pass
        return data[:_ERROR_BODY_LIMIT]

    async def _batches(
        self, response: httpx.Response, key: str | None
    ) -> AsyncGenerator[list[StreamChunk], None]:
        """The stream chunks of each read of the body, one list per read (one generator step per read, not per
        chunk: a read holds dozens of events)."""
        import httpx

        if not response.is_success:
            body = await self._read_limited(response)
            raise LlmCallError(
                failure_from_response(
                    provider=self.route.id,
                    status=response.status_code,
                    headers=response.headers,
                    body=body,
                    now=self._now,
                    redact=(lambda text: text.replace(key, "***")) if key else (lambda text: text),
                )
            )
        if response.headers.get("content-type", "").startswith("application/json"):
            await self._refuse_json(response)
        decoder = SseDecoder()
        mapper = ChunkMapper()
        received = 0
        parts = response.aiter_bytes()
        while True:
            try:
                data = await anext(parts)
            except StopAsyncIteration:
                if received == 0:
                    raise _fail(
                        f'provider "{self.route.id}" answered with an empty body', FailureCode.EMPTY_RESPONSE
                    ) from None
                raise _fail(
                    f'provider "{self.route.id}" closed the stream before [DONE]', FailureCode.STREAM_CLOSED
                ) from None
            except httpx.ReadTimeout as error:
                raise _fail(
                    f'provider "{self.route.id}" sent nothing for {self.route.idle_timeout:g} s',
                    FailureCode.TIMEOUT,
                ) from error
            except httpx.DecodingError as error:
                raise _fail(
                    f'provider "{self.route.id}" sent a body that cannot be decoded: {error}',
                    FailureCode.MALFORMED_RESPONSE,
                ) from error
            except httpx.TransportError as error:
                raise _fail(
                    f'the stream from provider "{self.route.id}" was interrupted: {type(error).__name__}: {error}',
                    FailureCode.TRANSPORT,
                ) from error
            received += len(data)
            try:
                events = decoder.feed(data)
            except SseEventTooLarge as error:
                raise _fail(
                    f'provider "{self.route.id}" sent a stream event that passed {error.limit} bytes before it ended',
                    FailureCode.MALFORMED_RESPONSE,
                ) from error
            batch: list[StreamChunk] = []
            for event in events:
                if event == b"[DONE]":
                    batch += mapper.done()
                    yield batch
                    return
                try:
                    batch += mapper.feed(decode_wire_chunk(event))
                except LlmCallError:
                    if batch:
                        yield batch  # what streamed before the failure is delivered first, as it arrived
                    raise
            if batch:
                yield batch

    async def _refuse_json(self, response: httpx.Response) -> None:
        """A 200 with a JSON body is not a stream: an error object some servers send, or a server ignoring
        `stream: true`."""
        body = await self._read_limited(response)
        try:
            decoded = msgspec.json.decode(body)
        except msgspec.DecodeError:
            decoded = None
        if isinstance(decoded, dict) and "error" in decoded:
            raise LlmCallError(failure_from_stream_error(decoded["error"]))
        raise _fail(
            f'provider "{self.route.id}" answered with JSON instead of an event stream',
            FailureCode.MALFORMED_RESPONSE,
        )
