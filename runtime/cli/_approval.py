"""The terminal as a surface that answers approvals (`approval/ask`): the question shown while the turn waits, and a
typed answer read as allow once, allow always, or reject with an optional reason; and the questions of
`ask_user_question` (`interaction/question`), answered by option numbers or free text. `dsh chat` and `dsh run`
share them; with no terminal to ask, `dsh run` rejects and says so."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from rich.console import Console
from rich.markup import escape

from dsh.runtime.tools import Answer, Approval, ApprovalRequest, Question, Questions

__all__ = [
    "ANSWER_HELP",
    "parse_answer",
    "parse_choice",
    "question",
    "terminal_answerer",
    "terminal_questioner",
]

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


def parse_choice(line: str, question: Question) -> Answer:
    """A typed answer to `question`: option numbers (`2`, or `1,3` where several may be chosen) select labels;
    anything else is the person's own answer."""
    text = line.strip()
    parts = [p for p in text.replace(",", " ").split() if p]
    if (
        question.options
        and parts
        and all(p.isdigit() and 1 <= int(p) <= len(question.options) for p in parts)
    ):
        picked = [question.options[int(p) - 1].label for p in parts]
        return Answer(question.id, tuple(picked if question.multi_select else picked[:1]))
    return Answer(question.id, (), text)


def terminal_questioner(
    out: Console, read: Callable[[], Awaitable[str | None]] | None
) -> Callable[[tuple[Answer, ...] | None, Questions, Any], Awaitable[tuple[Answer, ...] | None]]:
    """An `interaction/question` listener asking through `out` and `read`; with no terminal (`read` None), it says
    no one can answer and returns None."""

    async def ask(
        value: tuple[Answer, ...] | None, questions: Questions, next_: Any
    ) -> tuple[Answer, ...] | None:
        if read is None:
            out.print(
                "[yellow]the agent asked a question, and there is no terminal to answer it[/]",
                highlight=False,
            )
            return await next_(value)  # type: ignore[no-any-return]
        answers = []
        for question in questions.questions:
            header = f"[bold]{escape(question.header)}[/] · " if question.header else ""
            out.print(f"[bold yellow]question:[/] {header}{escape(question.question)}", highlight=False)
            for number, option in enumerate(question.options, 1):
                more = f" — {escape(option.description)}" if option.description else ""
                out.print(f"  {number}. {escape(option.label)}{more}", highlight=False)
            how = "numbers, or your own answer" if question.multi_select else "a number, or your own answer"
            out.print(
                f"[dim]{how if question.options else 'your answer'}; the turn waits[/]", highlight=False
            )
            line = await read()
            answers.append(parse_choice(line or "", question))
        return tuple(answers)

    return ask
