"""The terminal as a surface that answers approvals (`approval/ask`): the question shown while the turn waits, and a
typed answer read as allow once, allow always, or reject with an optional reason. `dsh chat` and `dsh run` share it;
with no terminal to ask, `dsh run` rejects and says so."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from rich.console import Console
from rich.markup import escape

from dsh.runtime.tools import Approval, ApprovalRequest

__all__ = ["ANSWER_HELP", "parse_answer", "question", "terminal_answerer"]

ANSWER_HELP = "o = allow once · a = allow always (this tool, this session) · r [reason] = reject"

_ONCE = {"o", "once", "y", "yes", "allow"}
_ALWAYS = {"a", "always"}
_REJECT = {"r", "n", "no", "reject", "deny"}


def parse_answer(line: str) -> Approval | None:
    """A typed answer: `o`/`y` allow once, `a` allow always, `r`/`n` reject (words after it: the reason, told to
    the model); None: not an answer."""
    text = line.strip()
    if not text:
        return None
    word, _, rest = text.partition(" ")
    word = word.lower()
    if word in _ONCE and not rest:
        return Approval("allowed-once")
    if word in _ALWAYS and not rest:
        return Approval("allowed-always")
    if word in _REJECT:
        return Approval("rejected", rest.strip() or None)
    return None


def question(request: ApprovalRequest) -> str:
    """How the question reads on the terminal (rich markup)."""
    reason = f" — {escape(request.reason)}" if request.reason else ""
    return (
        f"[bold yellow]approval needed:[/] [bold]{escape(request.tool)}[/] (call {escape(request.call_id)})"
        f"{reason}\n[dim]{ANSWER_HELP}; the turn waits[/]"
    )


def terminal_answerer(
    out: Console, read: Callable[[], Awaitable[str | None]] | None
) -> Callable[[Approval | None, ApprovalRequest, Any], Awaitable[Approval | None]]:
    """An `approval/ask` listener asking through `out` and `read` (the next typed line; None at end of input).
    `read` None: there is no terminal, so the request is rejected and the terminal says why."""

    async def ask(value: Approval | None, request: ApprovalRequest, next_: Any) -> Approval | None:
        if read is None:
            out.print(
                f"[yellow]approval needed for {escape(request.tool)} (call {escape(request.call_id)}), and there is "
                "no terminal to ask: rejected (run at a terminal, or pass --approval auto-allow)[/]",
                highlight=False,
            )
            return Approval("rejected", "no one could be asked: dsh ran without a terminal")
        out.print(question(request), highlight=False)
        while True:
            line = await read()
            if line is None:
                out.print("[yellow]end of input: rejected[/]", highlight=False)
                return Approval("rejected")
            answer = parse_answer(line)
            if answer is not None:
                return answer
            out.print(f"[dim]{ANSWER_HELP}[/]", highlight=False)

    return ask
