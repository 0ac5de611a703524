"""The `titles` plugin: when a top-level session's first turn completes, it frames the session's first human
message as JSON, logs `session/title-llm-request` (route, system prompt, messages, output cap), asks the model for
a short title, and logs `session/title` with the title, its source message and the call's usage.

The call happens as the turn ends, before the next one can start, so a replayed run logs it where the recording
did. A session that already has a title from a model or from its user (`dsh sessions title`) is left alone; a call
that fails, times out or says nothing usable is a warning and no title, never a failed turn."""

from __future__ import annotations

import json
import logging
import re

import anyio
import msgspec

from dsh.runtime.agent import EVENT, Agent, AgentEvent
from dsh.runtime.kernel import Context, Plugin
from dsh.runtime.llm import (
    LLM,
    CallConfig,
    CallKey,
    FinishStop,
    LlmRequest,
    MessageId,
    PluginSource,
    TextBlock,
    UserMessage,
    UserSource,
)
from dsh.runtime.session import (
    STORE,
    SessionTitle,
    SessionTitleData,
    SessionTitleLlmRequest,
    SessionTitleLlmRequestData,
    TitleRoute,
    TurnEnd,
    UserMessageEvent,
)

__all__ = ["PURPOSE", "TitlesConfig", "normalise_title", "plugin", "title_prompt"]

log = logging.getLogger("dsh.titles")

PURPOSE = "title"
"""The `CallKey.purpose` of a title call (its `turn` is the turn just completed, `step` 0)."""
PROVIDER_ID = "titles"
"""The title provider's id, logged in `session/title-llm-request` and in the title's source."""
MAX_TITLE_CHARS = 120


class TitlesConfig(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`target_words` / `target_cjk_characters`: the length asked for; `max_input_bytes`: the framed message is cut
    to this; `max_output_tokens`: the call's cap; `timeout_s`: how long the turn's end waits for it; `provider` and
    `model` (both or neither): the route, default the session's own (its latest `request/context`)."""

    target_words: int = 6
    target_cjk_characters: int = 12
    max_input_bytes: int = 4096
    max_output_tokens: int = 256
    timeout_s: float = 30.0
    provider: str | None = None
    model: str | None = None

    def __post_init__(self) -> None:
        if (self.provider is None) != (self.model is None):
            raise ValueError("titles: set provider and model together, or neither (the session's route)")


def title_prompt(config: TitlesConfig) -> str:
    """The system prompt of a title call (the original's, with the configured lengths)."""
    return "\n".join(
        (
            "Create a concise title for an AI coding-assistant session from the supplied human messages.",
            "Return only the title on one line, **in plain text of natural language**, with no quotes, prefix, "
            "explanation, Markdown, XML, or terminal control codes. No code is allowed.",
            "Use the language of the messages.",
            f"Aim for about {config.target_words} words in non-CJK languages or {config.target_cjk_characters} "
            "CJK characters.",
        )
    )


def _framed(messages: list[dict[str, object]]) -> str:
    return "Generate the session title from this JSON array of human messages:\n" + json.dumps(
        messages, ensure_ascii=False, separators=(",", ":")
    )


def _fit(seq: int, text: str, limit: int) -> str:
    """The framed message, its text cut (by characters) until the whole fits in `limit` UTF-8 bytes."""
    framed = _framed([{"seq": seq, "text": text}])
    while len(framed.encode()) > limit and text:
        text = text[: max(0, len(text) - max(1, (len(framed.encode()) - limit) // 2))]
        framed = _framed([{"seq": seq, "text": text}])
    return framed


_CONTROL = re.compile(r"[\x00-\x1f\x7f]+")
_QUOTES = "\"'`*#\u201c\u201d\u2018\u2019"  # straight and curly quotes, Markdown emphasis and headings


def normalise_title(text: str) -> str:
    """One line, control characters and surrounding quotes or Markdown emphasis removed, whitespace collapsed,
    at most `MAX_TITLE_CHARS` characters."""
    line = " ".join(_CONTROL.sub(" ", text).split())
    line = line.strip().strip(_QUOTES).strip()
    return line[:MAX_TITLE_CHARS].rstrip()


def _first_human_message(agent: Agent) -> tuple[int, str] | None:
    store = agent.ctx.get(STORE)
    for event in store.events(agent.id, types=(UserMessageEvent,)):
        view = event.view()
        if not isinstance(view, UserMessageEvent) or not isinstance(view.data.source, UserSource):
            continue
        text = "\n".join(block.text for block in view.data.content if isinstance(block, TextBlock))
        if text.strip():
            return event.seq, text
    return None


def _titled(agent: Agent) -> bool:
    """Whether the session already asked for a title or holds one a model or its user gave it."""
    store = agent.ctx.get(STORE)
    for event in store.events(agent.id, types=(SessionTitle, SessionTitleLlmRequest)):
        if event.type == SessionTitleLlmRequest.TAG:
            return True
        source = msgspec.json.decode(event.data).get("source")
        if isinstance(source, dict) and source.get("kind") in ("user", "provider"):
            return True
    return False


def _route(agent: Agent, config: TitlesConfig) -> TitleRoute | None:
    if config.provider is not None and config.model is not None:
        return TitleRoute(provider=config.provider, model=config.model)
    context = agent.request_context
    if context is not None:
        return TitleRoute(provider=context.provider, model=context.model)
    if agent.options.provider and agent.options.model:
        return TitleRoute(provider=agent.options.provider, model=agent.options.model)
    return None


async def _make_title(agent: Agent, config: TitlesConfig, turn: int) -> None:
    first = _first_human_message(agent)
    route = _route(agent, config)
    if first is None or route is None:
        return
    seq, text = first
    system = title_prompt(config)
    message = UserMessage(
        id=MessageId(f"{PURPOSE}-{turn}"),
        content=(TextBlock(_fit(seq, text, config.max_input_bytes)),),
        source=PluginSource(plugin=PROVIDER_ID),
    )
    await agent.append(
        SessionTitleLlmRequest(
            data=SessionTitleLlmRequestData(
                title_provider=PROVIDER_ID,
                message_seqs=(seq,),
                route=route,
                system=system,
                messages=(message,),
                max_tokens=config.max_output_tokens,
            )
        )
    )
    await agent.log.flush()
    request = LlmRequest(
        provider=route.provider,
        model=route.model,
        system=system,
        messages=(message,),
        config=CallConfig(max_tokens=config.max_output_tokens),
        session_id=agent.id,
        call=CallKey(turn=turn, step=0, attempt=1, purpose=PURPOSE),
    )
    calls = agent.ctx.get(LLM).stream(request)
    with anyio.move_on_after(config.timeout_s) as waited:
        await calls.drain()
    assembler = calls.assembled
    if waited.cancelled_caught:
        log.warning(
            "titles: the title call for session %s took over %ss; no title", agent.id, config.timeout_s
        )
        return
    finish = assembler.finish
    title = normalise_title(" ".join(b.text for b in assembler.blocks() if isinstance(b, TextBlock)))
    if finish is None or not isinstance(finish.reason, FinishStop) or not title:
        why = "no text" if finish is not None and isinstance(finish.reason, FinishStop) else finish
        log.warning("titles: the title call for session %s gave no title (%s)", agent.id, why)
        return
    source = {"kind": "provider", "provider": PROVIDER_ID, "model": msgspec.to_builtins(route)}
    await agent.append(
        SessionTitle(
            data=SessionTitleData(title=title, message_seqs=(seq,), source=source, usage=assembler.usage)
        )
    )
    await agent.log.flush()


def _apply(ctx: Context, config: TitlesConfig) -> None:
    asked: set[str] = set()

    async def on_event(appended: AgentEvent) -> None:
        agent, event = appended.agent, appended.event
        if event.type != TurnEnd.TAG or agent.id in asked or agent.parent is not None:
            return
        view = event.view()
        assert isinstance(view, TurnEnd), "the event table decodes turn/end as TurnEnd"
        if view.data.reason.kind != "completed":
            return
        asked.add(agent.id)
        if _titled(agent):
            return
        await _make_title(agent, config, view.data.turn)

    ctx.on(EVENT, on_event)


plugin = Plugin(
    name="titles",
    apply=_apply,
    config=TitlesConfig,
    needs=(LLM,),
    description="names each session with a model call after its first completed turn",
)
