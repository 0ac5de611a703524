"""`python -m benchmarks`: the chosen benchmarks run in name order with their figures on stdout, unchanged by the
progress bar (which a stderr that is no terminal never gets); an unknown name is refused."""

from __future__ import annotations

import importlib
import io
from types import ModuleType

import pytest
from rich.console import Console

from benchmarks import __main__ as runner


def _fake(name: str, status: int) -> ModuleType:
    module = ModuleType(name)

    def main() -> int:
        print(f"{name}: 1.00x")
        if name == "session":
            print("target append >= 0.5x: MISSED (0.40x)")
        return status

    module.main = main  # type: ignore[attr-defined]  # a stand-in benchmark module
    return module


@pytest.fixture
def fakes(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.import_module

    def load(name: str) -> ModuleType:
        if name == "benchmarks.bench_prompt":
            return _fake("prompt", 0)
        if name == "benchmarks.bench_session":
            return _fake("session", 1)
        if name == "benchmarks.bench_pg":
            return _fake("pg", 1)  # missed, and printed no MISSED line
        return real(name)

    monkeypatch.setattr(importlib, "import_module", load)


@pytest.mark.usefixtures("fakes")
def test_the_figures_go_to_stdout_and_nothing_to_a_stderr_that_is_no_terminal(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert runner.main(["session", "prompt"]) == 1  # one benchmark missed its target
    out, err = capsys.readouterr()
    assert out == (
        "== bench_prompt\nprompt: 1.00x\n== bench_session\nsession: 1.00x\ntarget append >= 0.5x: MISSED (0.40x)\n"
        "missed: bench_session: target append >= 0.5x: MISSED (0.40x)\n"
    )
    assert err == ""


@pytest.mark.usefixtures("fakes")
def test_the_last_line_lists_every_missed_target(capsys: pytest.CaptureFixture[str]) -> None:
    assert runner.main(["session", "pg"]) == 1
    assert capsys.readouterr().out.splitlines()[-1] == (
        "missed: bench_pg: a target (exit 1; see its figures); bench_session: target append >= 0.5x: MISSED (0.40x)"
    )
    assert runner.main(["prompt"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "all targets met"


@pytest.mark.usefixtures("fakes")
def test_on_a_terminal_the_bar_names_each_benchmark_on_stderr(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    screen = io.StringIO()
    monkeypatch.setattr(
        runner, "Console", lambda stderr: Console(file=screen, force_terminal=True, width=100)
    )
    assert runner.main(["prompt"]) == 0
    assert capsys.readouterr().out == "== bench_prompt\nprompt: 1.00x\nall targets met\n"
    assert "running bench_prompt" in screen.getvalue()
    assert "1/1" in screen.getvalue()


def test_an_unknown_benchmark_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert runner.main(["nope"]) == 2
    assert capsys.readouterr().err.startswith("unknown benchmark(s): bench_nope; available: bench_llm_sse,")
