"""`TerminalView`: renders an agent's events as they are appended: reasoning dim, text as it streams, each tool call
and a short form of its result, and how a turn ended. `dsh run`, `dsh chat` and the replay driver use it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec
from rich.console import Console
from rich.markup import escape

if TYPE_CHECKING:
    from runtime.agent import AgentEvent

__all__ = ["TerminalView"]

_RESULT_LINES = 3
_ARGUMENT_CHARS = 160


class _Chunk(msgspec.Struct):
    chunk: dict[str, Any]


class _Call(msgspec.Struct, rename="camel"):
    name: str
    arguments: str


class _ResultBlock(msgspec.Struct, rename="camel"):
    type: str
    content: list[dict[str, Any]] = []
    is_error: bool = False


class _ResultMessage(msgspec.Struct):
    content: list[_ResultBlock]


class _Result(msgspec.Struct):
    message: _ResultMessage
    error: dict[str, Any] | None = None


class _Reason(msgspec.Struct):
    kind: str
    error: dict[str, Any] | None = None
    message: str | None = None


class _TurnEnd(msgspec.Struct):
    turn: int
    reason: _Reason


_CHUNK = msgspec.json.Decoder(_Chunk)
_CALL = msgspec.json.Decoder(_Call)
_RESULT = msgspec.json.Decoder(_Result)
_TURN_END = msgspec.json.Decoder(_TurnEnd)


class TerminalView:
    """Prints to `out` what the user should see of a turn."""

    def __init__(self, out: Console, *, show_reasoning: bool = True) -> None:
        self.out = out
        self.show_reasoning = show_reasoning
        self._mode: str | None = None  # "text" | "reasoning" while a block streams

    async def on_event(self, event: AgentEvent) -> None:
        stored = event.event
        kind = stored.type
        if kind == "assistant/chunk":
            self._chunk(_CHUNK.decode(stored.data).chunk)
        elif kind == "tool/call":
            call = _CALL.decode(stored.data)
            arguments = (
                call.arguments
                if len(call.arguments) <= _ARGUMENT_CHARS
                else call.arguments[:_ARGUMENT_CHARS] + "…"
            )
            self._line(f"[bold cyan]→ {escape(call.name)}[/] [cyan]{escape(arguments)}[/]")
        elif kind == "tool/result":
            self._result(_RESULT.decode(stored.data))
        elif kind == "turn/end":
            self._turn_end(_TURN_END.decode(stored.data))

    def _chunk(self, chunk: dict[str, Any]) -> None:
        kind = chunk.get("type")
        if kind == "text-delta":
            self._stream("text", chunk["text"])
        elif kind == "reasoning-delta" and self.show_reasoning:
            self._stream("reasoning", chunk["text"])
        elif kind == "block-end":
            self._end_block()

    def _stream(self, mode: str, text: str) -> None:
        if self._mode != mode:
            self._end_block()
            self._mode = mode
        style = "dim" if mode == "reasoning" else ""
        self.out.print(text, end="", style=style, highlight=False, markup=False, soft_wrap=True)

    def _end_block(self) -> None:
        if self._mode is not None:
            self.out.print()
            self._mode = None

    def _line(self, markup: str) -> None:
        self._end_block()
        self.out.print(markup, highlight=False, soft_wrap=True)

    def _result(self, result: _Result) -> None:
        block = result.message.content[0] if result.message.content else None
        text = "".join(str(part.get("text", "")) for part in (block.content if block else []))
        lines = text.splitlines() or ["(empty)"]
        shown = "\n  ".join(escape(line) for line in lines[:_RESULT_LINES])
        more = f"\n  [dim]… {len(lines) - _RESULT_LINES} more lines[/]" if len(lines) > _RESULT_LINES else ""
        style = "red" if block is not None and block.is_error else "green"
        self._line(f"[{style}]←[/] {shown}{more}")

    def _turn_end(self, end: _TurnEnd) -> None:
        self._end_block()
        reason = end.reason
        if reason.kind == "error" and reason.error is not None:
            message, code = str(reason.error.get("message", "")), str(reason.error.get("code", ""))
            self._line(f"[bold red]turn {end.turn} failed:[/] {escape(message)} {escape(f'[{code}]')}")
        elif reason.kind == "aborted":
            self._line(f"[yellow]turn {end.turn} aborted[/]")
        elif reason.kind in ("max-tokens", "blocked"):
            detail = f": {escape(reason.message)}" if reason.message else ""
            self._line(f"[yellow]turn {end.turn} ended {reason.kind}{detail}[/]")
