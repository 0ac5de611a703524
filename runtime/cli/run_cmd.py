"""`dsh run "PROMPT"`: one headless turn of a deployment's agent, streamed to the terminal; exits 1 if the turn
ended in error, and continues a stored session with `--session`. `--approval POLICY` sets the session's approval
policy first (as `/approval POLICY` does in chat); an approval asked under `ask` is answered at the terminal, and
with no terminal it is rejected, saying so."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import anyio
import typer
from rich.console import Console
from rich.markup import escape

from dsh.runtime.agent import SLASH_COMMAND, SlashCommand
from dsh.runtime.host import (
    ConfigOption,
    CwdOption,
    ModelOption,
    ProviderOption,
    ReplayOption,
    SessionOption,
    StoreOption,
    open_host,
)
from dsh.runtime.tools import ASK, QUESTION

from ._approval import terminal_answerer, terminal_questioner
from .chat_cmd import LineReader

__all__ = ["run"]


async def _run(
    prompt: str,
    *,
    config: Path | None,
    store: str | None,
    session: str | None,
    model: str | None,
    provider: str | None,
    cwd: Path | None,
    replay: Path | None,
    out: Console,
    approval: str | None = None,
) -> int:
    err = Console(stderr=True, soft_wrap=True)
    with open_host(config, store, replay=replay, session=session, provider=provider) as host:
        fd = sys.stdin.fileno()
        reader = LineReader(fd) if os.isatty(fd) else None
        read = reader.readline if reader is not None else None
        host.ctx.on(ASK, terminal_answerer(err, read))
        host.ctx.on(QUESTION, terminal_questioner(err, read))
        opened = host.open_agent(session, model=model, provider=provider, cwd=cwd, out=out)
        async with opened as agent:
            if approval is not None:
                reply = await host.ctx.waterfall(
                    SLASH_COMMAND, None, SlashCommand(agent, "approval", f" {approval}")
                )
                if reply is None:
                    err.print(
                        "[red]--approval needs a deployment that loads the interaction plugin (use: interaction)[/]",
                        highlight=False,
                    )
                    return 2
                if reply.kind != "success":
                    err.print(f"[red]--approval: {escape(reply.text)}[/]", highlight=False)
                    return 2
            try:
                outcome = await agent.run(prompt)
            finally:  # the session id is printed whatever ends the turn (Ctrl-C cancelling it, a store that
                # failed under it): the session, its turn logged aborted, can be continued
                Console(stderr=True).print(f"[dim]session {agent.id}[/]", highlight=False)
        return 1 if outcome.kind == "error" else 0


def run(
    prompt: Annotated[str, typer.Argument(help="What to ask the agent.")],
    config: ConfigOption = None,
    session: SessionOption = None,
    store: StoreOption = None,
    model: ModelOption = None,
    provider: ProviderOption = None,
    cwd: CwdOption = None,
    replay: ReplayOption = None,
    approval: Annotated[
        str | None,
        typer.Option(
            "--approval",
            help="The session's approval policy from now on: ask (the terminal answers; with no terminal, rejected), "
            "never (rejected, the model is told up front) or auto-allow.",
        ),
    ] = None,
) -> None:
    """Run one turn headless and stream it to the terminal.

    Reasoning streams dim, then the text, each tool call and a short form of its result. The session id is printed on stderr; the exit status is 1 if the turn ended in error.

    Example: dsh run "list the Python files here" --config coding-agent
    """
    code = anyio.run(
        lambda: _run(
            prompt,
            config=config,
            store=store,
            session=session,
            model=model,
            provider=provider,
            cwd=cwd,
            replay=replay,
            out=Console(soft_wrap=True),
            approval=approval,
        )
    )
    if code:
        sys.exit(code)
