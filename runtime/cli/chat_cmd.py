"""`dsh chat`: an interactive terminal session with a deployment's agent. Each line is one turn, streamed as `dsh run`
streams it; Ctrl-C cancels the running turn (it is logged aborted), Ctrl-C at the prompt (or during a cancellation)
and Ctrl-D exit; slash commands fork the session, list sessions and show the rendered system prompt."""

from __future__ import annotations

import os
import signal
import stat
import sys
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import anyio
from anyio.abc import TaskStatus
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from runtime.agent import AGENTS, Agent, AgentOptions, assemble_context_for, last_turn_end
from runtime.kernel import DshError
from runtime.prompt import SYSTEM_PROMPT, render_prompt

from .host import Host, open_host
from .options import (
    ConfigOption,
    CwdOption,
    ModelOption,
    ProviderOption,
    ReplayOption,
    SessionOption,
    StoreOption,
)
from .sessions_cmd import sessions_table

__all__ = ["COMMANDS", "Interrupts", "LineReader", "chat"]

PROMPT = "[bold cyan]\u203a[/] "  # a single right-pointing angle quote

COMMANDS = {
    "/fork": "fork this session at the end of its last turn and continue in the fork",
    "/sessions": "list the sessions in the store (* marks this one)",
    "/prompt": "show the system prompt this agent's next step would send",
    "/help": "show this help",
    "/exit": "leave (Ctrl-D or Ctrl-C at the prompt do the same)",
}


class LineReader:
    """Lines of a file descriptor, read without blocking the event loop: the loop waits until the descriptor is
    readable and reads what is there, so a read waiting at the prompt is cancelled cleanly (no thread is left
    blocked in `input()`). At a terminal, the terminal's own line editing applies."""

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
    def __init__(self, host: Host, reader: LineReader, out: Console) -> None:
        self.host = host
        self.agents = host.ctx.get(AGENTS)
        self.reader = reader
        self.out = out
        self.err = Console(stderr=True, soft_wrap=True)
        self.interrupts = Interrupts(out)

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
                if word == "/fork":
                    return True
                await self._command(agent, word)
            else:
                await self._turn(agent, line)
            if self.interrupts.exiting:
                return False
        return False

    async def _lines(self) -> AsyncIterator[str]:
        while not self.interrupts.exiting:
            self.out.print()
            self.out.print(PROMPT, end="")
            with anyio.CancelScope() as scope:
                self.interrupts.prompt = scope
                try:
                    line = await self.reader.readline()
                finally:
                    self.interrupts.prompt = None
            if scope.cancelled_caught or line is None:
                self.out.print()
                return
            if not self.reader.interactive:  # nobody's terminal echoed it: show what is being answered
                self.out.print(line, markup=False)
            yield line

    async def _turn(self, agent: Agent, text: str) -> None:
        with anyio.CancelScope() as scope:
            self.interrupts.turn = scope
            try:
                await agent.run(text)
            finally:
                self.interrupts.turn = None

    async def _command(self, agent: Agent, word: str) -> None:
        try:
            if word == "/help":
                self.out.print(_help())
            elif word == "/sessions":
                self.out.print(sessions_table(self.agents.store, current=agent.id))
            elif word == "/prompt":
                assembly = await agent.ctx.get(SYSTEM_PROMPT).assemble(assemble_context_for(agent))
                system = render_prompt(assembly)
                self.out.print(system or "(empty: the request carries no system text)", markup=False)
                names = ", ".join(tool.name for tool in assembly.tools) or "none"
                self.out.print(f"[dim]tools: {escape(names)}[/]", highlight=False)
            else:
                self.out.print(f"[red]unknown command {escape(word)}[/]; /help lists them", highlight=False)
        except (
            DshError
        ) as error:  # a failed command (a prompt that does not render) is reported; the chat goes on
            self.out.print(f"[bold red]error:[/] {escape(str(error))}", highlight=False)


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
    with open_host(config, store, replay=replay) as host:
        opened = host.open_agent(session, model=model, provider=provider, cwd=cwd, out=out)
        intro = "new" if session is None else f"resumed: {_turns(host, session)} turns so far"
        chat = _Chat(host, LineReader(sys.stdin.fileno()), out)
        async with anyio.create_task_group() as group:
            await group.start(chat.interrupts.watch)
            last = await chat.run(opened, intro)
            group.cancel_scope.cancel()
        chat.err.print(
            f"[dim]session {escape(last)} · continue it with: dsh chat --session {escape(last)}[/]",
            highlight=False,
        )


def _turns(host: Host, session_id: str) -> int:
    return sum(1 for _ in host.store.events(session_id, types=("turn/end",)))


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

    Each turn streams as it arrives. Ctrl-C cancels a running turn (it is logged aborted); Ctrl-C at the prompt or Ctrl-D exits. Slash commands: /fork, /sessions, /prompt, /help, /exit.

    Example: dsh chat --config examples/coding-agent.yml --session 01J5Z3...
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
