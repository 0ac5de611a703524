"""`dsh run` end to end: a subprocess against an OpenAI-compatible server on 127.0.0.1 that asks for a bash call and
then answers; the whole turn is then visible in `dsh sessions show`."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from tests.plugins.llm_openai.helpers import call, wire
from tests.plugins.llm_openai.loopback import Reply, loopback, sse
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
    code, out, _ = await dsh("run", "hi", "--config", str(config), "--store", str(tmp_path / "s.db"), env=env)
    assert code == 1
    assert "DSH_TEST_MISSING_KEY" in out
    assert "MISSING_CREDENTIAL" in out


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
