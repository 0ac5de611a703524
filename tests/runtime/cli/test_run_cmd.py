"""`dsh run` end to end: a subprocess against an OpenAI-compatible server on 127.0.0.1 that asks for a bash call and
then answers; the whole turn is then visible in `dsh sessions show`."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import anyio
import pytest

from tests.plugins.llm_openai.helpers import call, wire
from tests.plugins.llm_openai.loopback import Reply, data, loopback, sse
from tests.runtime.cli.helpers import DSH, deployment

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
    assert "no such file or directory; expected a JSONL log or a scenario directory" in err
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
