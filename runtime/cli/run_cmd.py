"""`dsh run "PROMPT"`: one headless turn of a deployment's agent, streamed to the terminal; exits 1 if the turn
ended in error, and continues a stored session with `--session`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import anyio
import typer
from rich.console import Console

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
) -> int:
    with open_host(config, store, replay=replay, session=session, provider=provider) as host:
        opened = host.open_agent(session, model=model, provider=provider, cwd=cwd, out=out)
        async with opened as agent:
            try:
                outcome = await agent.run(prompt)
            finally:  # the session id is printed whatever ends the turn: a store that failed under it too
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
) -> None:
    """Run one turn headless and stream it to the terminal.

    Reasoning streams dim, then the text, each tool call and a short form of its result. The session id is printed on stderr; the exit status is 1 if the turn ended in error.

    Example: dsh run "list the Python files here" --config examples/coding-agent.yml
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
        )
    )
    if code:
        sys.exit(code)
