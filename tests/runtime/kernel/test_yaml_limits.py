"""`load_yaml`, the bounded reader of every dsh YAML file: an alias bomb and a recursive anchor are refused before
expansion (in well under a second, in bounded memory), for deployments and scenario files alike; ordinary anchors
and merge keys still load."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from dsh.replay import load_scenario
from dsh.replay.recordings._errors import ScriptError
from dsh.runtime.kernel import ConfigError, YamlLimitError, load_deployment, load_yaml

from .test_config import GOOD

LAUGHS = ["a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]"] + [
    f"{b}: &{b} [{', '.join(['*' + a] * 9)}]" for a, b in zip("abcdefgh", "bcdefghi", strict=True)
]
BOMB = "\n".join(["plugins: []", *LAUGHS]) + "\n"  # 9^9 (387 million) strings once expanded, in 600 bytes


def test_an_alias_bomb_in_a_deployment_is_refused_naming_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "deploy.yml"
    path.write_text(BOMB)
    with pytest.raises(ConfigError) as raised:
        load_deployment(path, env={})
    assert raised.value.line == 7, "the first node past the limit: f, 9^6 strings"
    assert str(raised.value).startswith(f"{path}:7: YAML refused: this node expands to ")
    assert "through its aliases (the limit is 100000 nodes); refused before expansion" in str(raised.value)


@pytest.mark.parametrize(
    ("text", "line", "problem"),
    [
        ("plugins: &p [*p]\n", 1, "recursive anchor"),
        ("plugins: []\nx: &m {a: {b: *m}}\n", 2, "recursive anchor"),
        ("plugins: []\nx: " + "[" * 150 + "]" * 150 + "\n", 2, "nests deeper than 100 levels"),
        (
            "plugins: []\na: &a "
            + "[" * 60
            + "]" * 60
            + "\nb: &b [[*a]]\nc: "
            + "[" * 39
            + "*b"
            + "]" * 39
            + "\n",
            4,
            "101 levels deep",
        ),
    ],
)
def test_recursive_and_deep_documents_are_refused(tmp_path: Path, text: str, line: int, problem: str) -> None:
    path = tmp_path / "deploy.yml"
    path.write_text(text)
    with pytest.raises(ConfigError) as raised:
        load_deployment(path, env={})
    assert problem in str(raised.value)
    assert raised.value.line == line


def test_ordinary_anchors_and_merge_keys_load() -> None:
    text = "base: &base {x: 1, y: [1, 2]}\none: {<<: *base, z: 3}\ntwo: [*base, *base]\n"
    assert load_yaml(text) == {
        "base": {"x": 1, "y": [1, 2]},
        "one": {"x": 1, "y": [1, 2], "z": 3},
        "two": [{"x": 1, "y": [1, 2]}, {"x": 1, "y": [1, 2]}],
    }
    assert [entry["id"] for entry in load_yaml(GOOD)["plugins"]] == ["hello", "user"]


def test_a_scenario_file_with_an_alias_bomb_is_refused(tmp_path: Path) -> None:
    (tmp_path / "scenario.yml").write_text("\n".join(LAUGHS) + "\n")
    (tmp_path / "root.jsonl").write_text("")
    with pytest.raises(ScriptError) as raised:
        load_scenario(tmp_path)
    assert raised.value.place == str(tmp_path / "scenario.yml")
    assert f'in "{tmp_path / "scenario.yml"}", line 6' in str(raised.value)
    assert "refused before expansion" in str(raised.value)


# Loads the bomb under a 2 GB address-space cap (so a loader that expands it fails fast instead of eating the
# machine) and prints the outcome, the CPU seconds the load took and the growth of peak memory (KiB).
_MEASURE = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
from dsh.runtime.kernel import ConfigError, load_deployment
before, cpu = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, resource.getrusage(resource.RUSAGE_SELF).ru_utime
try:
    load_deployment(sys.argv[1], env={})
    outcome = "loaded"
except ConfigError:
    outcome = "refused"
except MemoryError:
    outcome = "out-of-memory"
usage = resource.getrusage(resource.RUSAGE_SELF)
print(outcome, usage.ru_utime - cpu, usage.ru_maxrss - before)
"""


def test_an_alias_bomb_is_refused_in_under_a_second_in_bounded_memory(tmp_path: Path) -> None:
    path = tmp_path / "deploy.yml"
    path.write_text(BOMB)
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(path)], capture_output=True, text=True, timeout=120, check=True
    )
    outcome, cpu, grown = done.stdout.split()
    assert outcome == "refused", done.stdout
    assert float(cpu) < 1.0, f"{cpu} CPU seconds"
    assert int(grown) < 50 * 1024, f"peak memory grew by {grown} KiB"


def test_yaml_limit_error_is_a_yaml_error() -> None:
    with pytest.raises(YamlLimitError):
        load_yaml("a: &a [*a]\n")
