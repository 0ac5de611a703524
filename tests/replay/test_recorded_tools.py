"""Recorded tools: a tool whose definition is not hermetic (web_fetch, web_search), or one a scenario names
`recorded`, is served the recording's result in a replay instead of running; a timing-dependent one (the job
tools) runs and is served the recording's result; a call that does not match the recorded one (name and arguments
at the same turn, step and position) is a divergence naming both."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from dsh.plugins.tool_web import plugin as web_plugin
from dsh.replay import Rerun, load_scenario, rerun
from dsh.runtime.kernel import Context
from dsh.runtime.prompt import plugin as prompt_plugin
from dsh.runtime.tools import TOOLS
from dsh.runtime.tools import plugin as tools_plugin

FIXTURES = Path(__file__).parents[2] / "fixtures"
REFUSED = FIXTURES / "authored" / "web-fetch-refused"


def replayed(directory: Path) -> Rerun:
    scenario = load_scenario(directory)
    return anyio.run(lambda: rerun(scenario))


def copy(tmp_path: Path, *, tools: str | None, log_edit: tuple[str, str, str] | None = None) -> Path:
    """The web-fetch-refused scenario with its `tools:` line replaced, and optionally one event type's lines of
    its log edited (type, old, new)."""
    directory = tmp_path / "scenario"
    shutil.copytree(REFUSED, directory)
    spec = directory / "scenario.yml"
    kept = [line for line in spec.read_text().splitlines() if not line.startswith("tools:")]
    spec.write_text("\n".join(kept + ([f"tools: {tools}"] if tools else [])) + "\n")
    if log_edit is not None:
        edit_log(directory, *log_edit)
    return directory


def edit_log(directory: Path, kind: str, old: str, new: str) -> None:
    """Replace `old` by `new` in the recorded log's events of type `kind` only."""
    log = directory / "session.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    log.write_text("".join(line.replace(old, new) if f'"type":"{kind}"' in line else line for line in lines))


def test_the_web_tools_declare_themselves_non_hermetic() -> None:
    ctx = Context()
    ctx.plugin(prompt_plugin)
    ctx.plugin(tools_plugin)
    ctx.plugin(web_plugin)
    assert {tool.name: tool.hermetic for tool in ctx.get(TOOLS).visible()} == {"web_fetch": False}


def test_a_non_hermetic_tool_is_served_its_recorded_result(tmp_path: Path) -> None:
    served = "127.0.0.1 answered: all systems nominal"
    text = "127.0.0.1 resolves to 127.0.0.1, a non-public address; fetching private, loopback and link-local addresses is disabled (config allow_private_networks)"
    directory = copy(tmp_path, tools=None, log_edit=("tool/result", text, served))
    result = replayed(directory)
    assert result.divergence is None
    assert [(call.name, call.result, call.is_error) for call in result.tool_calls] == [
        ("web_fetch", served, True)
    ]
    # named live, the tool runs (and refuses the loopback address, as it did when recorded)
    live = replayed(
        copy(tmp_path / "live", tools="{web_fetch: live}", log_edit=("tool/result", text, served))
    )
    assert live.tool_calls[0].result == text


def test_a_hermetic_tool_named_recorded_is_not_run(tmp_path: Path) -> None:
    directory = tmp_path / "bash"
    shutil.copytree(FIXTURES / "authored" / "bash-exit-code", directory)
    edit_log(directory, "tool/result", "check failed: 2 errors", "served from the recording")
    spec = directory / "scenario.yml"
    spec.write_text(spec.read_text() + "tools: {bash: recorded}\n")
    result = replayed(directory)
    assert result.divergence is None
    assert "served from the recording" in (result.tool_calls[0].result or "")


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("http://127.0.0.1:9/status", "http://127.0.0.1:9/other"),
        ('"name":"web_fetch"', '"name":"web_search"'),
    ],
)
def test_a_call_that_does_not_match_the_recorded_one_diverges_naming_both(
    tmp_path: Path, old: str, new: str
) -> None:
    result = replayed(copy(tmp_path, tools=None, log_edit=("tool/call", old, new)))
    assert result.divergence is not None
    recorded = "web_search" if "web_search" in new else "web_fetch"
    url = "other" if "other" in new else "status"
    assert result.divergence.startswith(
        f"recorded tool mismatch: at turn 1 step 1 call 1 the recording {directory_log(tmp_path)} called "
        f'{recorded} {{"url": "http://127.0.0.1:9/{url}"}}; the replay called web_fetch '
        '{"url": "http://127.0.0.1:9/status"}'
    ), result.divergence


def directory_log(tmp_path: Path) -> str:
    return str(tmp_path / "scenario" / "session.jsonl")


def test_a_timing_dependent_tool_runs_for_its_effects_and_is_served_its_recorded_result(
    tmp_path: Path,
) -> None:
    directory = tmp_path / "jobs"
    shutil.copytree(FIXTURES / "authored" / "background-bash-job", directory)
    edit_log(directory, "tool/result", "building\\n[status: running]", "served\\n[status: running]")
    result = replayed(directory)
    assert result.divergence is None
    reads = [call.result for call in result.tool_calls if call.name == "job_output"]
    assert reads[0] == "served\n[status: running]"  # the recording's, not what the live job printed
    # the kill ran: the live job settled killed, as recorded
    ((_, log),) = result.logs
    assert b'"type":"job/settled"' in log
    assert b'"status":"killed","reason":"no longer needed"' in log
    # named live, the job tools answer from the live job
    spec = directory / "scenario.yml"
    spec.write_text(spec.read_text() + "tools: {job_output: live}\n")
    live = replayed(directory)
    first_read = next(c.result for c in live.tool_calls if c.name == "job_output")
    assert first_read is not None
    assert first_read.endswith("[status: running]")
    assert not first_read.startswith("served")


def test_a_replay_that_fetches_nothing_imports_no_http_client() -> None:
    # the web tools and the model route are loaded, but the model is the recording and nothing is fetched: the
    # HTTP client (~40 ms a process, paid by every worker of a sharded golden run and every `dsh replay`) is
    # imported only by a route that calls or a fetch that runs
    code = (
        "import sys, anyio\nfrom pathlib import Path\nfrom replay import load_scenario, rerun\n"
        f"result = anyio.run(rerun, load_scenario(Path({str(FIXTURES / 'harness' / 'bash-tool-turn')!r})))\n"
        "assert result.divergence is None, result.divergence\n"
        "print(sorted(m for m in sys.modules if m == 'httpx' or m.startswith('httpx.')))\n"
    )
    ran = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert ran.stdout.strip().splitlines()[-1] == "[]", ran.stdout + ran.stderr
