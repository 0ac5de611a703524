"""`TerminalView`: renders an agent's events as they are appended: reasoning dim, text as it streams, each tool call
and a short form of its result, each retry of a failed model call (and that the partial answer of the failed attempt
was discarded), and how a turn ended. `dsh run`, `dsh chat`, `dsh record` and the replay driver use it.

Problems go to `err` (stderr in the CLI), each on one line: a provider's message is folded (newlines and runs of
blanks to one space) in what is printed; the log keeps it whole."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape

from dsh.runtime.llm import (
    BlockEnd,
    Finish,
    FinishError,
    LlmFailure,
    ReasoningDelta,
    StreamChunk,
    TextBlock,
    TextDelta,
    ToolResultBlock,
)
from dsh.runtime.session import (
    AssistantChunk,
    LlmRetry,
    LlmRetryData,
    ToolCall,
    ToolResultData,
    ToolResultEvent,
    TurnEnd,
    TurnEndData,
)

if TYPE_CHECKING:
    from dsh.runtime.agent import AgentEvent

__all__ = ["TerminalView"]

_RESULT_LINES = 3
_ARGUMENT_CHARS = 160


def one_line(text: str) -> str:
    """`text` with every run of whitespace (newlines included) folded to one space, trimmed."""
    return " ".join(text.split())


def failure_text(failure: LlmFailure) -> str:
    """A failure as one line: its message folded, its code, and the provider's request id when there is one."""
    request = f" (request {one_line(failure.request_id)})" if failure.request_id else ""
    return f"{one_line(failure.message)} [{failure.code}]{request}"


class TerminalView:
    """Prints to `out` what the user should see of a turn, and its problems (a failed turn, a retry) to `err`
    (`out` when not given)."""

    def __init__(self, out: Console, *, err: Console | None = None, show_reasoning: bool = True) -> None:
        self.out = out
        self.err = out if err is None else err
        self.show_reasoning = show_reasoning
        self._mode: str | None = None  # "text" | "reasoning" while a block streams
        self._streamed = False  # the current attempt has printed text or reasoning
        self._discarded = False  # the last attempt failed after printing some

    async def on_event(self, event: AgentEvent) -> None:
        if event.agent.options.background:
            return  # a background child's work reaches the user through its parent (reports, notices)
        view = event.event.view()  # the typed event the agent appended: nothing is decoded
        if isinstance(view, AssistantChunk):
            self._chunk(view.data.chunk)
        elif isinstance(view, ToolCall):
            call = view.data
            arguments = (
                call.arguments
                if len(call.arguments) <= _ARGUMENT_CHARS
                else call.arguments[:_ARGUMENT_CHARS] + "…"
            )
            self._line(f"[bold cyan]→ {escape(call.name)}[/] [cyan]{escape(arguments)}[/]")
        elif isinstance(view, ToolResultEvent):
            self._result(view.data)
        elif isinstance(view, LlmRetry):
            self._retry(view.data)
        elif isinstance(view, TurnEnd):
            self._turn_end(view.data)

    def _chunk(self, chunk: StreamChunk) -> None:
        if isinstance(chunk, TextDelta):
            self._streamed = True
            self._stream("text", chunk.text)
        elif isinstance(chunk, ReasoningDelta):
            if self.show_reasoning:
                self._streamed = True
                self._stream("reasoning", chunk.text)
        elif isinstance(chunk, BlockEnd):
            self._end_block()
        elif isinstance(chunk, Finish):
            self._discarded = self._streamed and isinstance(chunk.reason, FinishError)
            self._streamed = False

    def _retry(self, retry: LlmRetryData) -> None:
        self._end_block()
        limit = f"/{retry.max_retries}" if retry.max_retries is not None else ""  # retry n of at most m
        wait = (
            f"{retry.delay_ms} ms"
            if retry.delay_ms < 1000
            else f"{retry.delay_ms / 1000:.1f}".removesuffix(".0") + " s"
        )
        code = retry.failure.code
        discarded = " [dim](the partial answer above was discarded)[/]" if self._discarded else ""
        self._discarded = False
        self.err.print(
            f"[yellow]retrying ({retry.retry}{limit}) after {escape(code)} in {wait}:[/] "
            f"{escape(one_line(retry.failure.message))}{discarded}",
            highlight=False,
            soft_wrap=True,
        )

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

    def _result(self, result: ToolResultData) -> None:
        first = result.message.content[0] if result.message.content else None
        block = first if isinstance(first, ToolResultBlock) else None
        text = "".join(part.text for part in (block.content if block else ()) if isinstance(part, TextBlock))
        lines = text.splitlines() or ["(empty)"]
        shown = "\n  ".join(escape(line) for line in lines[:_RESULT_LINES])
        more = f"\n  [dim]… {len(lines) - _RESULT_LINES} more lines[/]" if len(lines) > _RESULT_LINES else ""
        style = "red" if block is not None and block.is_error else "green"
        self._line(f"[{style}]←[/] {shown}{more}")

    def _turn_end(self, end: TurnEndData) -> None:
        self._end_block()
        reason = end.reason
        if reason.kind == "error" and reason.error is not None:
            self.err.print(
                f"[bold red]turn {end.turn} failed:[/] {escape(failure_text(reason.error))}",
                highlight=False,
                soft_wrap=True,
            )
        elif reason.kind == "aborted":
            self._line(f"[yellow]turn {end.turn} aborted[/]")
        elif reason.kind in ("max-tokens", "blocked"):
            detail = f": {escape(reason.message)}" if reason.message else ""
            self._line(f"[yellow]turn {end.turn} ended {reason.kind}{detail}[/]")
