"""`scripts/uv`'s decisions, with fake `uv` and `python3` programs on PATH: the uv on PATH is used; without one (or
with one that does not run), a private copy is installed once into the tools directory through a virtualenv of the
interpreter's own (never `pip install` into the interpreter), then reused; a foreign active virtualenv is ignored,
the checkout's own kept; a Python older than 3.11 is refused with one line."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "uv"

_FAKE_UV = """#!/bin/sh
echo "uv($0) args=$* venv=${VIRTUAL_ENV:-unset}"
"""

# a python3 that records what it is asked; `-m venv DIR` makes DIR/bin/python, whose `-m pip install ... uv`
# makes DIR/bin/uv (a fake uv)
_FAKE_PYTHON = """#!/bin/sh
echo "python3 $*" >> "$FAKE_LOG"
case "$1" in
  -c) exit "${FAKE_TOO_OLD:-0}" ;;
  --version) echo "Python 3.9.0"; exit 0 ;;
  -m)
    if [ "$2" = venv ]; then
      mkdir -p "$3/bin"
      cat > "$3/bin/python" <<'INNER'
#!/bin/sh
echo "venv-python $*" >> "$FAKE_LOG"
if [ "$2" = pip ]; then cp "$FAKE_UV_SOURCE" "$(dirname "$0")/uv"; chmod +x "$(dirname "$0")/uv"; fi
INNER
      chmod +x "$3/bin/python"
      exit 0
    fi
    echo "refused: $*" >> "$FAKE_LOG"; exit 1 ;;
esac
exit 1
"""


def _program(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def _run(tmp_path: Path, *args: str, bin_dir: Path, **env: str) -> subprocess.CompletedProcess[str]:
    base = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path), "FAKE_LOG": str(tmp_path / "log")}
    return subprocess.run(
        [str(SCRIPT), *args], env={**base, **env}, capture_output=True, text=True, check=False, cwd=tmp_path
    )


def _log(tmp_path: Path) -> list[str]:
    log = tmp_path / "log"
    return log.read_text().splitlines() if log.exists() else []


def test_the_uv_on_path_is_used_and_a_foreign_virtualenv_ignored(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    uv = _program(bin_dir / "uv", _FAKE_UV)
    ran = _run(tmp_path, "run", "--locked", "dsh", bin_dir=bin_dir, VIRTUAL_ENV=str(tmp_path / "elsewhere"))
    assert ran.stdout.strip() == f"uv({uv}) args=run --locked dsh venv=unset"
    own = str(ROOT / ".venv")
    ran = _run(tmp_path, "sync", bin_dir=bin_dir, VIRTUAL_ENV=own)
    assert ran.stdout.strip() == f"uv({uv}) args=sync venv={own}"


def test_without_uv_a_private_copy_is_installed_once_through_a_virtualenv(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    _program(bin_dir / "python3", _FAKE_PYTHON)
    _program(
        bin_dir / "uv", "#!/bin/sh\necho 'pyenv: uv: command not found' >&2\nexit 127\n"
    )  # a shim, no uv
    source = _program(tmp_path / "fake-uv", _FAKE_UV)
    tools = tmp_path / "tools"
    env = {"DSH_TOOLS": str(tools), "FAKE_UV_SOURCE": str(source)}
    ran = _run(tmp_path, "--version", bin_dir=bin_dir, **env)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == f"uv({tools}/bin/uv) args=--version venv=unset"
    assert "installing a private copy" in ran.stderr
    calls = _log(tmp_path)
    assert calls[1:] == [
        f"python3 -m venv {tools}",
        "venv-python -m pip install --quiet --disable-pip-version-check uv",
    ]
    assert not any("refused" in call for call in calls), "pip is never run by the interpreter itself"
    (tmp_path / "log").unlink()
    again = _run(tmp_path, "--version", bin_dir=bin_dir, **env)
    assert again.stdout == ran.stdout
    assert _log(tmp_path) == [], "the private copy is reused"


def test_a_python_older_than_3_11_is_refused_in_one_line(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    _program(bin_dir / "python3", _FAKE_PYTHON)
    ran = _run(tmp_path, "--version", bin_dir=bin_dir, DSH_TOOLS=str(tmp_path / "tools"), FAKE_TOO_OLD="1")
    assert ran.returncode == 2
    assert ran.stderr == "scripts/uv: dsh needs Python 3.11 or newer; `python3` is Python 3.9.0\n"
    assert not (tmp_path / "tools").exists()
    assert sorted(os.listdir(tmp_path)) == ["bin", "log"]
