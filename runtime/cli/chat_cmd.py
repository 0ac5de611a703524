"""`dsh chat`: an interactive terminal session with a deployment's agent. Each line is one turn, streamed as `dsh run`
streams it; Ctrl-C cancels the running turn (it is logged aborted), Ctrl-C at the prompt (or during a cancellation)
and Ctrl-D exit; slash commands fork the session, list sessions and show the rendered system prompt.

At a terminal, lines are edited with prompt_toolkit (arrows, Ctrl-R search, a pasted block as one message, history
kept next to the store file), and a line typed while a turn runs steers it: it is queued in the agent's inbox
(shown as queued) and enters the turn at its next step (shown as entering); a line the turn never took in (it was
cancelled, or it ended first) starts the next turn. Piped input is read line by line as it is.

An approval the turn needs (a tool call a policy or a hook says must be approved) is asked inline: the turn waits,
visibly, and the next line typed answers it (`o` allow once, `a` allow always, `r [reason]` reject). Slash commands
the chat does not know itself (`/permission PRESET`, `/approval POLICY`, `/sandbox MODE`) go to the plugin that owns
them, which logs them `command/run` / `command/done`."""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import stat
import sys
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Protocol

import anyio
from anyio.abc import TaskStatus
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from dsh.runtime.agent import (
    AGENTS,
    COMPACT,
    EVENT,
    SLASH_COMMAND,
    STEP_PREVIEW,
    Agent,
    AgentEvent,
    AgentOptions,
    Compacted,
    CompactRequest,
    SlashCommand,
    StepPreview,
    assemble_context_for,
    last_turn_end,
)
from dsh.runtime.host import (
    ConfigOption,
    CwdOption,
    Host,
    ModelOption,
    ProviderOption,
    ReplayOption,
    SessionOption,
    StoreOption,
    default_store_path,
    open_host,
    resolve_session,
)
from dsh.runtime.kernel import DshError
from dsh.runtime.llm import TextBlock, UserSource
from dsh.runtime.prompt import SYSTEM_PROMPT, render_prompt
from dsh.runtime.session import TurnEnd, UserMessageEvent, is_postgres_url, redact_url
from dsh.runtime.tools import ASK, QUESTION

from ._approval import terminal_answerer, terminal_questioner
from .prompt_cmd import message_source, message_text
from .sessions_cmd import sessions_table

__all__ = ["COMMANDS", "EditingReader", "Interrupts", "LineReader", "Reader", "chat", "history_path"]

PROMPT = "[bold cyan]\u203a[/] "  # a single right-pointing angle quote
PLAIN_PROMPT = "\u203a "
_KEY_ESCAPES = re.compile(r"\x1b(?:\[[0-9;?]*[ -/]*[@-~]|O.|.)|[\x00-\x08\x0b-\x1f\x7f]")
"""What a key other than a character leaves in a line typed while a turn runs (the terminal's own line discipline
reads it then): arrow keys' escape sequences and control characters, which mean nothing there."""

COMMANDS = {
    "/fork": "fork this session at the end of its last turn and continue in the fork",
    "/sessions": "list the sessions in the store (* marks this one)",
    "/prompt": "show the system prompt this agent's next step would send",
    "/compact": "compact this session's history now (a summary replaces older messages)",
    "/permission PRESET": "switch the permission preset: read-only, workspace-write, danger-full-access (interaction)",
    "/approval POLICY": "switch the approval policy: ask, never, auto-allow (interaction)",
    "/sandbox MODE": "switch bash's sandbox mode: read-only, workspace-write, danger-full-access (interaction)",
    "/help": "show this help",
    "/exit": "leave (Ctrl-D or Ctrl-C at the prompt do the same)",
}


class LineReader:
    """Lines of a file descriptor, read without blocking the event loop: the loop waits until the descriptor is
    readable and reads what is there, so a read waiting at the prompt is cancelled cleanly (no thread is left
    blocked in `input()`). At a terminal, the terminal's own line editing applies."""

    prompts = False

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._buffer = b""
        self._eof = False
        # The event loop can poll terminals, pipes and sockets; a regular file or /dev/null is always readable
        # (and cannot be polled), so those are read directly.
        mode = os.fstat(fd).st_mode
        self.interactive = os.isatty(fd)
        self._poll = self.interactive or stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)

    async def readline(self) -> str | None:
        """The next line without its newline, or None at end of input."""
        while b"\n" not in self._buffer and not self._eof:
            if self._poll:
                await anyio.wait_readable(self._fd)
            chunk = os.read(self._fd, 65536)
            if chunk:
                self._buffer += chunk
            else:
                self._eof = True
        if not self._buffer:
            return None
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.decode("utf-8", errors="replace").removesuffix("\r")

    def ahead(self) -> None:
        return None  # piped lines are read one turn at a time

    def remember(self, line: str) -> None:
        pass  # piped input keeps no history


class Reader(Protocol):
    """Where the chat's lines come from: `readline` is the next line (None at end of input); `interactive` says a
    person types them (and sees them echoed); `prompts` that the reader draws its own prompt; `ahead`, when not
    None, reads what is typed while a turn runs (a fresh reader per turn)."""

    interactive: bool
    prompts: bool

    def ahead(self) -> LineReader | None: ...

    def remember(self, line: str) -> None:
        """Keep `line` (typed while a turn ran) in the history, as if it had been typed at the prompt."""

    async def readline(self) -> str | None: ...


class _LeaveAtPrompt(Exception):
    """Ctrl-C at the editing prompt: the chat leaves, as a SIGINT at the prompt does."""


def history_path(store: Path) -> Path:
    """The chat's line history for a store: beside the store file (`sessions.db` -> `sessions.db.chat-history`)."""
    return store.with_name(store.name + ".chat-history")


class EditingReader:
    """Lines edited with prompt_toolkit at a terminal: arrow keys and Emacs editing, history (Up/Down, Ctrl-R
    search) kept in `history`, and a bracketed paste of several lines taken as one message. Only the text typed is
    returned; the escape sequences of the keys never are."""

    interactive = True
    prompts = True

    def __init__(self, history: Path, fd: int) -> None:
        from prompt_toolkit import PromptSession
        from prompt_toolkit.history import FileHistory

        self._fd = fd
        # the history holds what the user typed: readable by its owner only (0600), like the store; an existing
        # one is kept as it is (its mode is its owner's choice)
        with contextlib.suppress(FileExistsError):
            os.close(os.open(history, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        self._session: PromptSession[str] = PromptSession(history=FileHistory(str(history)))

    def ahead(self) -> LineReader:
        """While a turn runs the terminal is in its own (cooked) mode: Ctrl-C is SIGINT, and whole lines are read."""
        return LineReader(self._fd)

    def remember(self, line: str) -> None:
        self._session.history.append_string(line)

    async def readline(self) -> str | None:
        try:
            # the chat's own SIGINT watcher stays in charge (handle_sigint=False): a raw-mode Ctrl-C at the prompt
            # arrives as a key, and prompt_toolkit raises KeyboardInterrupt for it
            return await self._session.prompt_async(PLAIN_PROMPT, handle_sigint=False)
        except EOFError:
            return None
        except KeyboardInterrupt:
            raise _LeaveAtPrompt from None


class Interrupts:
    """What Ctrl-C means right now: the first cancels the running turn; during that cancellation, at the prompt
    or between turns, it asks the chat to exit."""

    def __init__(self, out: Console) -> None:
        self.out = out
        self.turn: anyio.CancelScope | None = None
        self.prompt: anyio.CancelScope | None = None
        self.exiting = False

    def interrupt(self) -> None:
        if self.turn is not None and not self.turn.cancel_called:
            self.turn.cancel()
            self.out.print("\n[yellow]^C cancelling the turn (Ctrl-C again exits)[/]", highlight=False)
            return
        self.exiting = True
        if self.prompt is not None:
            self.prompt.cancel()

    async def watch(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Receive SIGINT for as long as the chat runs (instead of KeyboardInterrupt tearing everything down)."""
        with anyio.open_signal_receiver(signal.SIGINT) as signals:
            task_status.started()
            async for _ in signals:
                self.interrupt()


class _Chat:
    def __init__(self, host: Host, reader: Reader, out: Console, *, replaying: bool = False) -> None:
        self.host = host
        self.replaying = replaying
        self.queued: list[str] = []  # lines typed while a turn ran, oldest first
        self.leave_when_done = False  # Ctrl-D typed while a turn ran: leave once the queued lines have run
        self.agents = host.ctx.get(AGENTS)
        self.reader = reader
        self.out = out
        self.err = Console(stderr=True, soft_wrap=True)
        self.interrupts = Interrupts(out)
        self.awaiting_answer = False  # an approval waits for the next line typed
        self.reading_ahead = False  # `_queue` reads the lines typed while the turn runs
        self._answers_in, self._answers = anyio.create_memory_object_stream[str](16)
        host.ctx.on(ASK, terminal_answerer(out, self._answer_line))
        host.ctx.on(QUESTION, terminal_questioner(out, self._answer_line))

    async def _answer_line(self) -> str | None:
        """The next line typed, as the answer to an approval: taken from `_queue` while it reads ahead, else read."""
        if not self.reading_ahead:
            return await self.reader.readline()
        self.awaiting_answer = True
        try:
            return await self._answers.receive()
        finally:
            self.awaiting_answer = False

    async def run(self, opened: AbstractAsyncContextManager[Agent], intro: str) -> str:
        """Converse in `opened`, then in each fork the user asks for; returns the last session's id."""
        while True:
            async with opened as agent:
                self._banner(agent, intro)
                fork = await self._converse(agent)
            if not fork:
                return agent.id
            at = last_turn_end(self.agents.store, agent.id)
            options = AgentOptions(provider=agent.options.provider, model=agent.options.model, cwd=agent.cwd)
            opened = self.agents.fork(agent.id, options, at=at)
            intro = (
                f"forked from {agent.id} at seq {at} (the end of its last turn)"
                if at is not None
                else f"forked from {agent.id}, which has no completed turn: a fresh session in its workspace"
            )

    def _banner(self, agent: Agent, intro: str) -> None:
        model = agent.options.model or "(set by the deployment's listeners)"
        self.out.print(
            f"[bold]dsh chat[/] · session [bold]{escape(agent.id)}[/] · {escape(intro)}\n"
            f"[dim]model {escape(model)} · cwd {escape(str(agent.cwd or '-'))} · /help lists commands · "
            "Ctrl-C cancels a turn · Ctrl-D exits[/]",
            highlight=False,
        )

    async def _converse(self, agent: Agent) -> bool:
        """Read and run lines until the user leaves (False) or forks (True)."""
        async for line in self._lines():
            text = line.strip()
            if not text:
                continue
            word = text.split(maxsplit=1)[0]
            if word.startswith("/") and word[1:].isalpha():
                if word == "/exit":
                    return False
                if word == "/fork" and self.replaying:
                    self.out.print(
                        "[yellow]a fork has no recording: its turns would ask the replayed model for calls the "
                        "recording does not hold. /fork works in a chat with a live model.[/]",
                        highlight=False,
                    )
                    continue
                if word == "/fork":
                    return True
                await self._command(agent, word, text[len(word) :])
            else:
                await self._turn(agent, line)
            if self.interrupts.exiting:
                return False
        return False

    async def _lines(self) -> AsyncIterator[str]:
        while not self.interrupts.exiting:
            if self.queued:
                queued = self.queued.pop(0)
                self.out.print()
                self.out.print(PROMPT, escape(queued), sep="", highlight=False)
                yield queued
                continue
            if self.leave_when_done:
                return
            self.out.print()
            if not self.reader.prompts:
                self.out.print(PROMPT, end="")
            line: str | None
            with anyio.CancelScope() as scope:
                self.interrupts.prompt = scope
                try:
                    line = await self.reader.readline()
                except _LeaveAtPrompt:
                    self.interrupts.exiting = True
                    line = None
                finally:
                    self.interrupts.prompt = None
            if scope.cancelled_caught or line is None:
                self.out.print()
                return
            if not self.reader.interactive:  # nobody's terminal echoed it: show what is being answered
                self.out.print(line, markup=False)
            yield line

    async def _turn(self, agent: Agent, text: str | None, steering: list[str] | None = None) -> None:
        """Run a turn with `text` (None: with the steering left waiting, `steering` its lines)."""
        steering = [] if steering is None else steering

        async def entering(event: AgentEvent) -> None:
            view = event.event.view()
            if event.agent is not agent or not isinstance(view, UserMessageEvent) or not steering:
                return
            message = view.data
            said = "".join(b.text for b in message.content if isinstance(b, TextBlock))
            if isinstance(message.source, UserSource) and said == steering[0]:
                steering.pop(0)
                self.out.print(f"[dim]entering this step: {escape(said)}[/]", highlight=False)

        dispose = agent.ctx.on(EVENT, entering)
        try:
            async with anyio.create_task_group() as group:
                ahead = self.reader.ahead()
                if ahead is not None:
                    self.reading_ahead = True
                    group.start_soon(self._queue, agent, ahead, steering)
                with anyio.CancelScope() as scope:
                    self.interrupts.turn = scope
                    try:
                        await agent.run(text)
                    finally:
                        self.interrupts.turn = None
                group.cancel_scope.cancel()
        finally:
            self.reading_ahead = False
            dispose()
        if steering and not self.interrupts.exiting:
            # the turn ended (or was cancelled) before its next step: the steering starts the next turn
            await self._turn(agent, None, steering)

    async def _queue(self, agent: Agent, ahead: LineReader, steering: list[str]) -> None:
        """Queue each line typed while the turn runs as steering, and say so; Ctrl-D (end of input) leaves after
        the turn. A line typed once the turn has ended runs as the next turn."""
        while True:
            line = await ahead.readline()
            if line is None:
                self.leave_when_done = True
                return
            text = _KEY_ESCAPES.sub("", line)
            if self.awaiting_answer:  # the turn waits on an approval: this line answers it
                await self._answers_in.send(text)
                continue
            if not text.strip():
                continue
            self.reader.remember(text)
            if agent.busy:
                steering.append(text)
                await agent.queue(text, target="next-step")
                self.out.print(
                    f"[dim]queued: {escape(text)} · enters this turn at its next step[/]", highlight=False
                )
            else:
                self.queued.append(text)
                self.out.print(
                    f"[dim]queued ({len(self.queued)}): {escape(text)} · runs when this turn ends[/]",
                    highlight=False,
                )

    async def _command(self, agent: Agent, word: str, rest: str = "") -> None:
        try:
            if word == "/help":
                self.out.print(_help())
            elif word == "/sessions":
                self.out.print(sessions_table(self.agents.store, current=agent.id))
            elif word == "/prompt":
                assembly = await agent.ctx.get(SYSTEM_PROMPT).assemble(assemble_context_for(agent))
                system = render_prompt(assembly)
                self.out.print(system or "(empty: the request carries no system text)", markup=False)
                added = await agent.ctx.waterfall(STEP_PREVIEW, (), StepPreview(agent.cwd, agent.messages()))
                for message in added:
                    self.out.print(
                        f"[dim]user message ({escape(message_source(message))}):[/]", highlight=False
                    )
                    self.out.print(message_text(message), markup=False)
                names = ", ".join(tool.name for tool in assembly.tools) or "none"
                self.out.print(f"[dim]tools: {escape(names)}[/]", highlight=False)
            elif word == "/compact":
                done = await agent.ctx.waterfall(COMPACT, None, CompactRequest(agent))
                self.out.print(compact_report(done), highlight=False)
            else:
                reply = await agent.ctx.waterfall(SLASH_COMMAND, None, SlashCommand(agent, word[1:], rest))
                if reply is None:
                    self.out.print(
                        f"[red]unknown command {escape(word)}[/]; /help lists them", highlight=False
                    )
                elif reply.kind == "success":
                    self.out.print(escape(reply.text), highlight=False)
                else:
                    self.out.print(f"[red]{escape(reply.text)}[/]", highlight=False)
        except (
            DshError
        ) as error:  # a failed command (a prompt that does not render) is reported; the chat goes on
            self.out.print(f"[bold red]error:[/] {escape(str(error))}", highlight=False)


def compact_report(done: Compacted | None) -> str:
    """One line saying what `/compact` did."""
    if done is None:
        return "[yellow]nothing compacts in this deployment: add the compaction plugin[/]"
    said = f"history {done.before} → {done.after} tokens (estimated)"
    if done.summarised:
        said = f"compacted: a summary replaced older messages; {said}"
    if done.note:
        said = f"{said}; {escape(done.note)}"
    return f"[dim]{said}[/]"


def _help() -> Table:
    table = Table(show_header=False, box=None, padding=(0, 2, 0, 0))
    for name, text in COMMANDS.items():
        table.add_row(f"[bold]{name}[/]", text)
    table.add_row("[bold]Ctrl-C[/]", "cancel the running turn (it is logged aborted); at the prompt, exit")
    table.add_row("[bold]Ctrl-D[/]", "exit")
    return table


async def _chat(
    *,
    config: Path | None,
    store: str | None,
    session: str | None,
    model: str | None,
    provider: str | None,
    cwd: Path | None,
    replay: Path | None,
    out: Console,
) -> None:
    with open_host(config, store, replay=replay, session=session, provider=provider) as host:
        opened = host.open_agent(session, model=model, provider=provider, cwd=cwd, out=out)
        if session is None:
            intro = "new"
        else:
            turns = _turns(host, resolve_session(host.store, session))
            intro = f"resumed: {turns} turn{'' if turns == 1 else 's'} so far"
        # a PostgreSQL store has no file to keep the line history beside: the user's default store's place is used
        history_beside = (
            Path(store) if store is not None and not is_postgres_url(store) else default_store_path()
        )
        chat = _Chat(host, _reader(history_beside), out, replaying=replay is not None)
        async with anyio.create_task_group() as group:
            await group.start(chat.interrupts.watch)
            last = await chat.run(opened, intro)
            group.cancel_scope.cancel()
        # the store URL as it may be shown: its password stays in $PGPASSWORD or a passfile, never on the screen
        again = shlex.join(
            ["dsh", "chat", "--session", last]
            + [
                part
                for flag, value in (
                    ("--config", config),
                    ("--store", None if store is None else redact_url(store)),
                    ("--replay", replay),
                )
                if value is not None
                for part in (flag, str(value))
            ]
        )
        chat.err.print(f"[dim]session {escape(last)} · continue it with: {escape(again)}[/]", highlight=False)


def _reader(store: Path) -> Reader:
    """prompt_toolkit's line editing when a person types at a terminal; the plain line reader otherwise (pipes,
    files, a terminal without a terminal on stdout)."""
    fd = sys.stdin.fileno()
    if os.isatty(fd) and sys.stdout.isatty():
        return EditingReader(history_path(store), fd)
    return LineReader(fd)


def _turns(host: Host, session_id: str) -> int:
    return sum(1 for _ in host.store.events(session_id, types=(TurnEnd,)))


def chat(
    config: ConfigOption = None,
    session: SessionOption = None,
    store: StoreOption = None,
    model: ModelOption = None,
    provider: ProviderOption = None,
    cwd: CwdOption = None,
    replay: ReplayOption = None,
) -> None:
    """Talk with the deployment's agent in the terminal, one turn per line you type.

    Each turn streams as it arrives. Ctrl-C cancels a running turn (it is logged aborted); Ctrl-C at the prompt or Ctrl-D exits. Slash commands: /fork, /sessions, /prompt, /compact, /help, /exit.

    Example: dsh chat --config coding-agent --session 4f1c2a9e-7b3d-4c8e-9a51-2d6e0f8b3c17
    """
    anyio.run(
        lambda: _chat(
            config=config,
            store=store,
            session=session,
            model=model,
            provider=provider,
            cwd=cwd,
            replay=replay,
            out=Console(soft_wrap=True, highlight=False),
        )
    )
