"""Workspace instructions in a re-run: the `agent-instructions` messages a replayed session sent are produced live,
from the scenario's workspace and the run itself, and must equal the recording's byte for byte (text and source).
The first difference is a divergence that names the instruction file behind it (an AGENTS.md edited since the
recording, one missing, one the recording never had)."""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from dsh.runtime.llm import InstructionsSource, UserMessage
from dsh.runtime.session import StoredEvent, UserMessageEvent

__all__ = ["instruction_divergence", "instruction_messages"]


def instruction_messages(events: Iterable[StoredEvent], *, seed: int = 0) -> list[UserMessage]:
    """The `agent-instructions` user messages logged at seq >= `seed`, in order."""
    out = []
    for event in events:
        if event.seq < seed or event.type != UserMessageEvent.TAG:
            continue
        view = event.view()
        if isinstance(view, UserMessageEvent) and isinstance(view.data.source, InstructionsSource):
            out.append(view.data)
    return out


def _body(message: UserMessage) -> bytes:
    return msgspec.json.encode({"content": message.content, "source": message.source})


def _files(message: UserMessage | None) -> dict[str, tuple[str, str | None]]:
    if message is None:
        return {}
    assert isinstance(message.source, InstructionsSource)
    return {c.scope: (c.path, c.digest) for c in message.source.changes}


def _why(recorded: UserMessage | None, replayed: UserMessage | None) -> str:
    was, now = _files(recorded), _files(replayed)
    for scope in dict.fromkeys((*was, *now)):
        if scope not in now:
            return f"{was[scope][0]}: the recording sent it, the re-run did not"
        if scope not in was:
            return f"{now[scope][0]}: the re-run sent it, the recording did not"
        if was[scope] != now[scope]:
            return (
                f"{now[scope][0]}: it differs from the recording (digest {was[scope][1]} recorded, "
                f"{now[scope][1]} now)"
            )
    return "the same files, worded differently"


def instruction_divergence(
    recorded: list[UserMessage], replayed: list[UserMessage], *, cwd: str | None = None
) -> str | None:
    """None when the re-run sent the recording's instruction messages, byte for byte; else which one differs, why
    (the file), and both texts."""
    for index in range(max(len(recorded), len(replayed))):
        was = recorded[index] if index < len(recorded) else None
        now = replayed[index] if index < len(replayed) else None
        was_body = _body(was) if was is not None else b""
        now_body = _body(now) if now is not None else b""
        if cwd is not None:
            now_body = now_body.replace(cwd.encode(), b"{{cwd}}")
        if was_body == now_body:
            continue
        return (
            f"workspace instructions: message {index + 1} differs: {_why(was, now)}\n"
            f"  - recorded: {was_body.decode()[:600] or '(none)'}\n"
            f"  + replayed: {now_body.decode()[:600] or '(none)'}"
        )
    return None
