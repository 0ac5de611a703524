"""`dsh run` end to end: a subprocess against an OpenAI-compatible server on 127.0.0.1 that asks for a bash call and
then answers; the whole turn is then visible in `dsh sessions show`."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import anyio
import pexpect
import pytest

from dsh.runtime.session import SessionStore
from tests.plugins.llm_openai.helpers import call, wire
from tests.plugins.llm_openai.loopback import Reply, data, loopback, sse
from tests.runtime.cli.helpers import DSH, deployment, plain_env

pytestmark = pytest.mark.anyio


async def dsh(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = await anyio.run_process([*DSH, *args], check=False, env={**os.environ, **(env or {})})
    return result.returncode, result.stdout.decode(), result.stderr.decode()


async def test_run_completes_a_tool_using_turn_and_sessions_show_has_it(tmp_path: Path) -> None:
    asks = sse(
        wire(tool_calls=[call(0, "", id="call_1", name="bash")]),
        wire(tool_calls=[call(0, '{"command": "echo from-bash", "description": "say it"}')]),
        wire(finish="tool_calls"),
    )
    answers = sse(wire(content="all "), wire(content="done"), wire(finish="stop"))
    async with loopback(Reply(parts=[asks]), Reply(parts=[answers])) as server:
        config = tmp_path / "deployment.yml"
        config.write_text(deployment(server.base_url))
        store = tmp_path / "sessions.db"
        code, out, err = await dsh(
            "run", "echo something", "--config", str(config), "--store", str(store), "--cwd", str(tmp_path)
        )
        assert code == 0, err
        assert "→ bash" in out
        assert "from-bash" in out
        assert "all done" in out
        session = err.split("session ")[-1].strip()
        second = server.requests[1].json()
        assert second["messages"][-1]["role"] == "tool"
        assert "from-bash" in second["messages"][-1]["content"]
        code, shown, err = await dsh("sessions", "show", session, "--store", str(store))
    assert code == 0, err
    for fact in ("echo something", "bash", "from-bash", "all done", "completed"):
        assert fact in shown


async def test_run_without_the_key_says_which_variable_to_set_and_exits_1(tmp_path: Path) -> None:
    config = tmp_path / "deployment.yml"
    config.write_text(deployment("http://127.0.0.1:9", key_env="DSH_TEST_MISSING_KEY"))
    env = {"DSH_TEST_MISSING_KEY": ""}
    code, _, err = await dsh("run", "hi", "--config", str(config), "--store", str(tmp_path / "s.db"), env=env)
    assert code == 1
    assert "DSH_TEST_MISSING_KEY" in err
    assert "MISSING_CREDENTIAL" in err


async def test_run_without_a_deployment_names_the_flag_and_the_variable(tmp_path: Path) -> None:
    env = {"DSH_CONFIG": ""}
    code, _, err = await dsh("run", "hi", "--store", str(tmp_path / "s.db"), env=env)
    assert code == 2
    assert "--config" in err
    assert "DSH_CONFIG" in err


async def test_run_replays_a_recording_with_tools_live_and_no_key(tmp_path: Path) -> None:
    root = Path(__file__).parents[3]
    code, out, err = await dsh(
        "run",
        "anything: the recording answers",
        "--config",
        str(root / "examples" / "coding-agent.yml"),
        "--replay",
        str(root / "fixtures" / "harness" / "bash-tool-turn"),
        "--store",
        str(tmp_path / "s.db"),
        "--cwd",
        str(tmp_path),
        env={"DEEPSEEK_API_KEY": ""},
    )
    assert code == 0, err
    assert "→ bash" in out
    assert "TERMINAL_OK" in out  # the bash call ran live
    assert out.rstrip().endswith("DONE")


ROOT = Path(__file__).resolve().parents[3]
FS_TOOLS = ROOT / "fixtures" / "authored" / "fs-tools"


def _no_config() -> dict[str, str]:
    return {"DSH_CONFIG": ""}


async def test_replay_needs_no_deployment_and_runs_the_tools_in_cwd(tmp_path: Path) -> None:
    shutil.copytree(FS_TOOLS / "workspace", tmp_path / "work")
    code, out, err = await dsh(
        "run", "any words", "--replay", str(FS_TOOLS), "--store", str(tmp_path / "s.db"),
        "--cwd", str(tmp_path / "work"), env=_no_config(),
    )  # fmt: skip
    assert code == 0, err
    assert "→ edit" in out
    assert (tmp_path / "work" / "CHANGES.md").is_file()


async def test_replay_swaps_a_deployments_route_whatever_it_is_called(tmp_path: Path) -> None:
    shutil.copytree(FS_TOOLS / "workspace", tmp_path / "work")
    code, out, err = await dsh(
        "run", "any words", "--replay", str(FS_TOOLS), "--config", str(ROOT / "examples" / "coding-agent.yml"),
        "--store", str(tmp_path / "s.db"), "--cwd", str(tmp_path / "work"),
    )  # fmt: skip
    assert code == 0, err
    assert "no adapter is registered" not in err
    assert "→ write" in out


async def test_replay_of_a_missing_log_is_one_error_line(tmp_path: Path) -> None:
    code, _, err = await dsh(
        "run", "hi", "--replay", str(tmp_path / "nope"), "--store", str(tmp_path / "s.db"), env=_no_config()
    )
    assert code == 2
    assert err.count("\n") == 1
    assert "no such file or directory; expected a JSONL log, a scenario directory, or `demo`" in err
    assert "Errno" not in err


async def test_a_store_in_a_missing_directory_is_an_exit_2_error(tmp_path: Path) -> None:
    code, _, err = await dsh("sessions", "list", "--store", str(tmp_path / "typo" / "s.db"))
    assert code == 2
    assert "does not exist" in err
    assert not (tmp_path / "typo").exists()
    (tmp_path / "notes.txt").write_text("not a database")
    code, _, err = await dsh("sessions", "list", "--store", str(tmp_path / "notes.txt"))
    assert (code, err.strip()) == (
        2,
        f"error: --store {tmp_path / 'notes.txt'}: not a dsh session store (not an SQLite database)",
    )


async def test_prompt_reads_the_deployment_from_dsh_config(tmp_path: Path) -> None:
    code, out, err = await dsh("prompt", env={"DSH_CONFIG": str(ROOT / "examples" / "coding-agent.yml")})
    assert code == 0, err
    assert out.startswith("# system prompt")


async def test_prompt_shows_the_workspace_instructions_the_first_step_would_send(tmp_path: Path) -> None:
    workspace = tmp_path / "repo"
    (workspace / ".git").mkdir(parents=True)
    (workspace / "AGENTS.md").write_text("Use tabs.\n")
    example = str(ROOT / "examples" / "coding-agent.yml")
    home = {"DSH_HOME": str(tmp_path / "home")}  # no user-global AGENTS.md
    code, out, err = await dsh("prompt", "--config", example, "--cwd", str(workspace), env=home)
    assert code == 0, err
    assert "# user message (agent-instructions)\n\n<system-reminder>\n" in out
    assert "Instructions from: AGENTS.md\n\nUse tabs.\n" in out
    code, out, err = await dsh("prompt", "--config", example, "--cwd", str(workspace), "--json", env=home)
    assert code == 0, err
    assert '"kind": "agent-instructions"' in out


async def test_sessions_show_takes_an_id_prefix_and_says_why_a_turn_failed(tmp_path: Path) -> None:
    store = str(tmp_path / "s.db")
    recording = str(ROOT / "fixtures" / "harness" / "error-finish")
    code, _, err = await dsh(
        "run", "hi", "--replay", recording, "--store", store, "--cwd", str(tmp_path), env=_no_config()
    )
    assert code == 1
    session = err.split("session ")[-1].strip()
    code, shown, err = await dsh("sessions", "show", session[:8], "--store", store)
    assert code == 0, err
    assert f"session {session}" in shown
    assert "turn 1 ended: error: simulated provider error (HTTP 401) [AUTH]" in shown


async def test_resuming_with_replay_runs_the_recordings_next_turn_then_says_it_has_no_more(
    tmp_path: Path,
) -> None:
    """`dsh run --session ID --replay LOG` and `dsh chat --session ID --replay LOG` (the hint chat prints when it
    leaves) continue from the recording's next turn; they once waited forever for the recording's turn-1 input."""
    store, recording = str(tmp_path / "s.db"), str(ROOT / "fixtures" / "harness" / "multi-turn")
    replayed = ("--replay", recording, "--store", store, "--cwd", str(tmp_path))
    with anyio.fail_after(120):
        code, out, err = await dsh("run", "one", *replayed, env=_no_config())
        assert (code, out.splitlines()[-1]) == (0, "ONE"), err
        session = err.split("session ")[-1].strip()
        code, out, err = await dsh("run", "two", "--session", session, *replayed, env=_no_config())
        assert (code, out.splitlines()[-1]) == (0, "TWO"), err
        chat = await anyio.run_process(
            [*DSH, "chat", "--session", session, *replayed], input=b"three\n", check=False, env=_no_config()
        )
    said = chat.stderr.decode()  # a failed turn is one line on stderr
    assert chat.returncode == 0, said
    assert "turn 3 failed: the recording has no turn 3 (" in said
    assert "holds 2 turns); a replay goes only as far as its recording [REPLAY_ENDED]" in said


async def test_a_replay_whose_recorded_input_nothing_live_can_send_fails_at_once_naming_it(
    tmp_path: Path,
) -> None:
    """`steering-mid-turn` records the user steering the turn; `dsh run` types nothing during it, and no tool, job
    or other agent is running, so the held step fails at once (not after the 60 s bound) naming the input."""
    recording = str(ROOT / "fixtures" / "authored" / "steering-mid-turn")
    work = tmp_path / "work"
    shutil.copytree(ROOT / "fixtures" / "authored" / "steering-mid-turn" / "workspace", work)
    with anyio.fail_after(30):
        code, _, err = await dsh(
            "run", "hi", "--replay", recording, "--store", str(tmp_path / "s.db"), "--cwd", str(work),
            env=_no_config(),
        )  # fmt: skip
    assert code == 2, err
    assert "records input ['next-step user'] before step/end" in err
    assert "nothing live can send it" in err


async def test_the_readme_replay_demo_copies_the_recordings_workspace_into_an_empty_cwd(
    tmp_path: Path,
) -> None:
    """`dsh run "fix the greeting" --replay fixtures/authored/fs-tools --cwd "$(mktemp -d)"`: the scenario's
    workspace is copied into the empty directory first, so every tool finds its file and the edit is real; a cwd
    that holds anything is the user's and is left as it is."""
    empty, full = tmp_path / "empty", tmp_path / "full"
    empty.mkdir()
    full.mkdir()
    (full / "mine.txt").write_text("mine")
    with anyio.fail_after(120):
        code, out, err = await dsh(
            "run", "fix the greeting", "--replay", str(FS_TOOLS), "--store", str(tmp_path / "s.db"),
            "--cwd", str(empty), env=_no_config(),
        )  # fmt: skip
        assert code == 0, err
        assert 'return "hello, dsh"' in (empty / "src" / "app.py").read_text()
        assert (empty / "CHANGES.md").read_text() == '- the greeting is now "hello, dsh"\n'
        assert "← hello, dsh" in out  # the bash tool ran the edited app
        code, out, err = await dsh(
            "run", "fix the greeting", "--replay", str(FS_TOOLS), "--store", str(tmp_path / "s.db"),
            "--cwd", str(full), env=_no_config(),
        )  # fmt: skip
    assert sorted(p.name for p in full.iterdir()) == [
        "CHANGES.md",
        "mine.txt",
    ]  # write made its file; no copy


async def test_ctrl_c_during_a_run_prints_the_session_id_to_continue(tmp_path: Path) -> None:
    """The `cancel` recording streams "partial", then hangs; Ctrl-C in the terminal cancels the turn, and the session
    id is still printed, so the user can continue it with --session."""
    work = tmp_path / "work"
    work.mkdir()
    recording = str(ROOT / "fixtures" / "harness" / "cancel")
    args = ["run", "hi", "--replay", recording, "--cwd", str(work), "--store", str(tmp_path / "s.db")]
    term = pexpect.spawn(
        DSH[0],
        [*DSH[1:], *args],
        env=plain_env(DSH_CONFIG=""),
        encoding="utf-8",
        timeout=60,
        dimensions=(50, 200),
    )
    try:
        await anyio.to_thread.run_sync(term.expect_exact, "partial")
        term.sendintr()
        await anyio.to_thread.run_sync(term.expect, r"session ([0-9a-f-]{36})")
        match = term.match
        await anyio.to_thread.run_sync(term.expect, pexpect.EOF)
    finally:
        term.close(force=True)
    assert isinstance(match, re.Match)
    with SessionStore(tmp_path / "s.db") as store:
        assert store.info(match[1]).id == match[1]


async def test_a_retry_is_shown_on_stderr_with_the_partial_answer_it_discarded(tmp_path: Path) -> None:
    # LiteLLM's proxy reports an upstream rate limit mid-stream, the status as a string, the message on lines
    limited = {
        "error": {"message": "RateLimitError: slow\n\ndown", "type": "throttling_error", "code": "429"}
    }
    first = Reply(parts=[data(wire(content="half an ans")), data(limited)])
    second = Reply(parts=[sse(wire(content="whole answer"), wire(finish="stop"))])
    async with loopback(first, second) as server:
        config = tmp_path / "deployment.yml"
        config.write_text(
            deployment(server.base_url, retry={"max_retries": 3, "base_delay_ms": 20, "jitter": 0})
        )
        code, out, err = await dsh(
            "run", "hi", "--config", str(config), "--store", str(tmp_path / "s.db"), "--cwd", str(tmp_path)
        )
    assert code == 0, err
    assert out == "half an ans\nwhole answer\n"
    assert err.splitlines()[0] == (
        "retrying (1/3) after RATE_LIMIT in 20 ms: the provider reported an error mid-stream: "
        "RateLimitError: slow down (the partial answer above was discarded)"
    )


async def test_a_mid_stream_auth_error_is_not_retried_and_is_one_line_on_stderr(tmp_path: Path) -> None:
    denied = {"error": {"message": "Authentication Error,\n\nInvalid proxy server token", "code": "401"}}
    reply = Reply(
        headers={"content-type": "text/event-stream", "x-litellm-call-id": "call-9"}, parts=[data(denied)]
    )
    async with loopback(reply) as server:
        config = tmp_path / "deployment.yml"
        config.write_text(deployment(server.base_url, retry={"max_retries": 3, "base_delay_ms": 20}))
        code, out, err = await dsh(
            "run", "hi", "--config", str(config), "--store", str(tmp_path / "s.db"), "--cwd", str(tmp_path)
        )
        assert len(server.requests) == 1
    assert code == 1
    assert out == ""
    assert err.splitlines()[0] == (
        "turn 1 failed: the provider reported an error mid-stream: Authentication Error, Invalid proxy server "
        "token [AUTH] (request call-9)"
    )
