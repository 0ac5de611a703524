"""The `dsh web` application: the session list, a session's page and its live stream, over one session store. Routes
read the store and render templates; `_security.Guard` stands in front of all of them."""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import anyio
from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from dsh.runtime.llm import ReasoningDelta, TextDelta
from dsh.runtime.session import (
    AssistantChunk,
    PriceTable,
    SessionInfo,
    SessionNotFoundError,
    SessionStoreProtocol,
    export_jsonl,
    session_stats,
)
from dsh.runtime.tools import Answer, Approval

from ._chat import OUTCOMES, Chat, ChatError, Waiting
from ._security import Guard
from ._views import LONG, Item, items, live_from, markdown, session_row, when

__all__ = ["FORM_LIMIT", "PAGE_SIZE", "RERUN_GROUP", "create_app", "csrf_token", "sse_message"]

PAGE_SIZE = 50
"""Sessions on one page of the list."""
POLL_S = 0.05
"""How often the live stream looks for new events (a length query on the store)."""
FORM_LIMIT = 1 << 20
"""The largest form a page may post (a prompt), in bytes."""
KEEPALIVE_S = 15.0
"""How often the live stream sends a comment when nothing was appended, so proxies keep it open."""

_HERE = Path(__file__).parent


_LINE_BREAKS = re.compile(r"\r\n|\r|\n")


def sse_message(event: str, data: str, *, id: int | None = None) -> str:
    """One server-sent event: `data` split at every line break the protocol knows (CR, LF, CRLF) into `data:`
    lines, which the browser joins with LF, so text a model or tool wrote (a stray CR included) cannot end the
    field early and forge a field or an event of its own."""
    lines = [f"event: {event}"]
    if id is not None:
        lines.append(f"id: {id}")
    lines.extend(f"data: {line}" for line in _LINE_BREAKS.split(data))
    return "\n".join(lines) + "\n\n"


def _tree(infos: list[SessionInfo]) -> list[tuple[SessionInfo, int]]:
    """Sessions newest first, each one's forks and subagents right under it (indented by depth)."""
    children: dict[str | None, list[SessionInfo]] = {}
    known = {info.id for info in infos}
    for info in infos:
        parent = info.parent_id if info.parent_id in known else None
        children.setdefault(parent, []).append(info)
    ordered: list[tuple[SessionInfo, int]] = []
    stack = [(info, 0) for info in sorted(children.get(None, []), key=lambda i: (i.created_at, i.id))]
    while stack:  # newest root first; a parent before its children, children oldest first
        info, depth = stack.pop()
        ordered.append((info, depth))
        below = sorted(children.get(info.id, []), key=lambda i: (i.created_at, i.id), reverse=True)
        stack.extend((child, depth + 1) for child in below)
    return ordered


def csrf_token(token: str) -> str:
    """The value every form posts beside the cookie: derived from the access token, so a page of another site,
    which can neither read the cookie nor this page, cannot post one."""
    return hmac.new(token.encode(), b"dsh-web-form", hashlib.sha256).hexdigest()


async def _form_lists(request: Request, token: str) -> dict[str, list[str]]:
    """The posted form's fields, each with every value given (URL-encoded, at most `FORM_LIMIT` bytes), its CSRF
    field checked."""
    body = b""
    async for part in request.stream():
        body += part
        if len(body) > FORM_LIMIT:
            raise HTTPException(413, f"a form may hold at most {FORM_LIMIT} bytes")
    fields = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
    given = (fields.get("csrf") or [""])[-1]
    if not hmac.compare_digest(given.encode(), csrf_token(token).encode()):
        raise HTTPException(403, "the form is missing this page's CSRF field: reload the page and try again")
    return fields


async def _form(request: Request, token: str) -> dict[str, str]:
    """The posted form's fields, the last value of each (see `_form_lists`)."""
    return {key: values[-1] for key, values in (await _form_lists(request, token)).items()}


RERUN_GROUP = "dsh.rerun"
"""The entry-point group of the function the replay view re-runs a stored session with (replay/ provides it:
plugins cannot import it): `async (store, session_id) -> report` with `replayed_id`, `divergence`, `recorded`,
`replayed` and `at`."""


def _rerunner() -> Callable[[SessionStoreProtocol, str], Awaitable[Any]]:
    from importlib.metadata import entry_points

    found = list(entry_points(group=RERUN_GROUP))
    if len(found) != 1:
        raise HTTPException(
            501,
            f"the replay view needs exactly one `{RERUN_GROUP}` entry point (dsh's replay/), found {len(found)}",
        )
    rerun: Callable[[SessionStoreProtocol, str], Awaitable[Any]] = found[0].load()
    return rerun


def create_app(
    store: SessionStoreProtocol,
    *,
    token: str,
    hosts: Iterable[str],
    chat: Chat | None = None,
    writable: bool = True,
    prices: PriceTable | None = None,
) -> Guard:
    """The application over `store`, answering only requests with `token` and a Host in `hosts`; with `chat`
        (a loaded deployment's agents), pages can also start, prompt, steer, cancel and fork sessions; unless
        `writable` is False (`--read-only`), they can re-run a session (the replayed one is stored beside it). `prices`
    states each session's cost (None: no cost shown)."""
    env = Environment(
        loader=FileSystemLoader(_HERE / "templates"),
        autoescape=select_autoescape(default=True),
        enable_async=False,
    )
    env.globals.update(
        when=when,
        markdown=markdown,
        LONG=LONG,
        csrf=csrf_token(token),
        chat=chat is not None,
        writable=writable,
    )

    def page(name: str, status: int = 200, **context: object) -> HTMLResponse:
        return HTMLResponse(env.get_template(name).render(**context), status_code=status)

    def info_of(session_id: str) -> SessionInfo:
        try:
            return store.info(session_id)
        except (SessionNotFoundError, KeyError):
            raise HTTPException(404, f"no session {session_id!r} in this store") from None

    async def session_list(request: Request) -> Response:
        query = request.query_params.get("q", "").strip().lower()
        try:
            number = max(1, int(request.query_params.get("page", "1")))
        except ValueError:
            number = 1
        ordered = _tree(store.sessions())
        if query:
            matched = []
            for info, depth in ordered:
                if query in info.id.lower() or query in (info.cwd or "").lower():
                    matched.append(session_row(store, info, depth))
                    continue
                row = session_row(store, info, depth)
                if query in row.title.lower():
                    matched.append(row)
            total = len(matched)
            rows = matched[(number - 1) * PAGE_SIZE : number * PAGE_SIZE]
        else:
            total = len(ordered)
            shown = ordered[(number - 1) * PAGE_SIZE : number * PAGE_SIZE]
            rows = [session_row(store, info, depth) for info, depth in shown]
        pages = max(1, -(-total // PAGE_SIZE))
        return page("list.html", rows=rows, page=number, pages=pages, total=total, q=query)

    async def session_page(request: Request) -> Response:
        info = info_of(request.path_params["session_id"])
        length = store.length(info.id)
        events = list(store.events(info.id, stop=length))
        shown = list(items(events))
        children = store.children(info.id)
        parent = None if info.parent_id is None else store.info(info.parent_id)
        ended = [it.turn for it in shown if it.kind == "end" and it.turn is not None]
        running = chat is not None and chat.running(info.id)
        waiting = [] if chat is None else chat.waiting(info.id)
        figures = session_stats(store, info.id, prices=prices)
        return page(
            "session.html",
            info=info,
            items=shown,
            length=length,
            live_from=live_from(events, length),
            children=children,
            parent=parent,
            ended=ended,
            running=running,
            waiting=waiting,
            figures=figures,
        )

    def chatting() -> Chat:
        if chat is None:
            raise HTTPException(
                405, "this dsh web is read-only: start it with --config (or --replay) to chat"
            )
        return chat

    async def new_session(request: Request) -> Response:
        fields = await _form(request, token)
        prompt = fields.get("prompt", "").strip()
        if not prompt:
            raise HTTPException(400, "a new session needs a prompt")
        cwd = Path(fields.get("cwd", "").strip() or Path.cwd())
        session = await chatting().start(prompt, cwd)
        return RedirectResponse(f"/s/{session}", 303)

    async def prompt(request: Request) -> Response:
        info = info_of(request.path_params["session_id"])
        text = (await _form(request, token)).get("text", "").strip()
        if not text:
            raise HTTPException(400, "the prompt is empty")
        await chatting().prompt(info.id, text)
        return RedirectResponse(f"/s/{info.id}", 303)

    async def cancel(request: Request) -> Response:
        info = info_of(request.path_params["session_id"])
        await _form(request, token)
        chatting().cancel(info.id)
        return RedirectResponse(f"/s/{info.id}", 303)

    async def fork(request: Request) -> Response:
        info = info_of(request.path_params["session_id"])
        fields = await _form(request, token)
        try:
            turn = int(fields.get("turn", ""))
        except ValueError:
            raise HTTPException(400, "fork needs the number of a turn that ended") from None
        child = chatting().fork(info.id, turn)
        return RedirectResponse(f"/s/{child.id}", 303)

    async def replay_view(request: Request) -> Response:
        info = info_of(request.path_params["session_id"])
        await _form(request, token)
        if not writable:
            raise HTTPException(405, "this dsh web is read-only: a re-run stores the replayed session")
        report = await _rerunner()(store, info.id)
        at = report.at
        start = 0 if at is None else max(0, at - 8)
        stop = max(len(report.recorded), len(report.replayed)) if at is None else at + 12
        rows = [
            (
                index,
                report.recorded[index] if index < len(report.recorded) else "",
                report.replayed[index] if index < len(report.replayed) else "",
            )
            for index in range(start, min(stop, max(len(report.recorded), len(report.replayed))))
        ]
        return page("replay.html", info=info, report=report, rows=rows)

    async def approve(request: Request) -> Response:
        info = info_of(request.path_params["session_id"])
        fields = await _form(request, token)
        outcome = fields.get("outcome", "")
        if outcome not in OUTCOMES:
            raise HTTPException(400, f"an approval is one of {', '.join(OUTCOMES)}, got {outcome!r}")
        message = fields.get("message", "").strip() or None
        chatting().answer(info.id, fields.get("call", ""), Approval(outcome, message))  # type: ignore[arg-type]
        return RedirectResponse(f"/s/{info.id}", 303)

    async def answer(request: Request) -> Response:
        info = info_of(request.path_params["session_id"])
        body = await _form_lists(request, token)
        call = (body.get("call") or [""])[-1]
        asked = next((w for w in chatting().waiting(info.id) if w.call_id == call), None)
        if asked is None:
            raise HTTPException(409, f"call {call} of session {info.id} is not waiting for an answer")
        answers = tuple(
            Answer(
                id=question.id,
                selected=tuple(body.get(f"choice-{question.id}", [])),
                custom=(body.get(f"custom-{question.id}") or [""])[-1].strip() or None,
            )
            for question in asked.questions
        )
        chatting().answer(info.id, call, answers)
        return RedirectResponse(f"/s/{info.id}", 303)

    async def export(request: Request) -> Response:
        info = info_of(request.path_params["session_id"])
        out = io.BytesIO()
        export_jsonl(store, info.id, out)
        headers = {"content-disposition": f'attachment; filename="{info.id}.jsonl"'}
        return Response(out.getvalue(), media_type="application/x-ndjson", headers=headers)

    def _fragment(item: Item) -> str:
        return env.get_template("_item.html").render(item=item)

    async def live(request: Request) -> Response:
        info = info_of(request.path_params["session_id"])
        try:
            start = max(0, int(request.query_params.get("from", "0")))
        except ValueError:
            start = 0

        def waiting_html() -> str:
            waiting: list[Waiting] = [] if chat is None else chat.waiting(info.id)
            return env.get_template("_waiting.html").render(info=info, waiting=waiting)

        async def stream() -> AsyncIterator[str]:
            seen = start
            quiet = 0.0
            shown_waiting = ""
            while True:
                now_waiting = waiting_html()
                if now_waiting != shown_waiting:
                    shown_waiting = now_waiting
                    yield sse_message("waiting", now_waiting)
                length = store.length(info.id)
                if length > seen:
                    for event in store.events(info.id, start=seen, stop=length):
                        view = event.view()
                        if isinstance(view, AssistantChunk) and isinstance(
                            view.data.chunk, TextDelta | ReasoningDelta
                        ):
                            delta = {
                                "key": f"{view.data.turn}-{view.data.step}",
                                "reasoning": isinstance(view.data.chunk, ReasoningDelta),
                                "text": view.data.chunk.text,
                                "seq": event.seq,
                            }
                            yield sse_message("delta", json.dumps(delta))
                            continue
                        for shown in items([event]):
                            yield sse_message("item", _fragment(shown), id=event.seq)
                    seen = length
                    quiet = 0.0
                    continue
                await anyio.sleep(POLL_S)
                quiet += POLL_S
                if quiet >= KEEPALIVE_S:
                    quiet = 0.0
                    yield ": keepalive\n\n"

        return StreamingResponse(stream(), media_type="text/event-stream")

    async def chat_refused(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, ChatError)
        return page("error.html", exc.status, code=exc.status, detail=str(exc))

    async def refused(request: Request, exc: Exception) -> Response:
        detail = exc.detail if isinstance(exc, HTTPException) else "not found"
        status = exc.status_code if isinstance(exc, HTTPException) else 404
        return page("error.html", status, code=status, detail=detail)

    app = Starlette(
        routes=[
            Route("/", session_list, methods=["GET"]),
            Route("/s/{session_id}", session_page, methods=["GET"]),
            Route("/s/{session_id}/live", live, methods=["GET"]),
            Route("/s/{session_id}/export", export, methods=["GET"]),
            Route("/new", new_session, methods=["POST"]),
            Route("/s/{session_id}/prompt", prompt, methods=["POST"]),
            Route("/s/{session_id}/cancel", cancel, methods=["POST"]),
            Route("/s/{session_id}/fork", fork, methods=["POST"]),
            Route("/s/{session_id}/replay", replay_view, methods=["POST"]),
            Route("/s/{session_id}/approve", approve, methods=["POST"]),
            Route("/s/{session_id}/answer", answer, methods=["POST"]),
            Mount("/static", StaticFiles(directory=_HERE / "static"), name="static"),
        ],
        exception_handlers={HTTPException: refused, ChatError: chat_refused},
    )
    return Guard(app, token=token, hosts=hosts)
