"""What the tool hardening costs, each against the unhardened way measured beside it:
  * bash: one `true` command through `run_shell` (under the supervisor that kills it when dsh dies, and under the
    workspace-write sandbox when bubblewrap works here) against a bare `bash -c true` subprocess; and with the
    default limits (rlimits, the process and memory watch) against none, which the target puts within 1.2x;
  * grep: an ordinary pattern over a tree of text files with RE2 (the engine grep uses, block search first) against
    Python's `re` matching every line (the engine it replaced), for a dense and a sparse pattern, and as grep runs
    (it stops once it has one line more than the 100 it shows).
  * glob: ordinary glob and include patterns matched against the relative paths of a normal tree, as matched now
    (Python's `re` for shapes whose backtracking is bounded, RE2 for the rest) against Python's `re` on every
    pattern (the old way), which the target puts within 1.5x.
Figures are ratios, best of several runs each.
"""

from __future__ import annotations

import re
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio

from dsh.plugins.tool_bash import LimitsConfig, Sandbox, SandboxUnavailableError, run_shell
from dsh.plugins.tool_fs.globs import GlobMatcher, linear_only, translate
from dsh.plugins.tool_fs.grep import Hits, Pattern, compile_pattern, search_stream

COMMANDS = 20
RUNS = 5
FILES = 40
LINES = 5_000


async def _best(work: Callable[[], Awaitable[None]]) -> float:
    best = float("inf")
    for _ in range(RUNS):
        start = time.perf_counter()
        await work()
        best = min(best, time.perf_counter() - start)
    return best


async def _bash(cwd: Path) -> dict[str, float]:
    async def bare() -> None:
        for _ in range(COMMANDS):
            await anyio.run_process(["bash", "-c", "true"], cwd=cwd, start_new_session=True)

    async def guarded() -> None:
        for _ in range(COMMANDS):
            await run_shell("true", cwd=cwd, limit_seconds=10, cap=1000)

    limits = LimitsConfig().limits()

    async def limited() -> None:
        for _ in range(COMMANDS):
            await run_shell("true", cwd=cwd, limit_seconds=10, cap=1000, limits=limits)

    figures = {"bare": await _best(bare), "guarded": await _best(guarded), "limited": await _best(limited)}
    figures["guarded"] = min(
        figures["guarded"], await _best(guarded)
    )  # the two interleaved: load shifts alike
    figures["limited"] = min(figures["limited"], await _best(limited))
    try:
        sandbox = Sandbox.check("workspace-write", network=False, plugin="benchmark")
    except SandboxUnavailableError:
        return figures

    async def sandboxed() -> None:
        for _ in range(COMMANDS):
            await run_shell("true", cwd=cwd, limit_seconds=10, cap=1000, sandbox=sandbox)

    figures["sandboxed"] = await _best(sandboxed)
    return figures


def _grep(root: Path, pattern: str) -> dict[str, float]:
    if not list(root.glob("*.py")):
        for index in range(FILES):
            lines = [f"line {n}: value = compute(x{n}, y) # TODO check {n % 7}" for n in range(LINES)]
            (root / f"f{index}.py").write_text("\n".join(lines) + "\n")
    compiled = re.compile(pattern)
    files = sorted(root.glob("*.py"))

    def python_re() -> int:
        hits = 0
        for path in files:
            for line in path.read_text().split("\n"):
                if compiled.search(line):
                    hits += 1
        return hits

    regex = compile_pattern(pattern)

    def _search(path: Path, regex: Pattern, check: Callable[[], None], limit: int) -> list[tuple[int, str]]:
        with path.open("rb") as file:
            found: Hits = search_stream(file, regex, check, limit)
        return found.lines

    def re2() -> int:
        return sum(len(_search(path, regex, lambda: None, 10**9)) for path in files)

    def capped() -> int:  # as the tool searches: it stops once it has one more than the 100 lines it shows
        found = 0
        for path in files:
            found += len(_search(path, regex, lambda: None, 101 - found))
            if found > 100:
                break
        return found

    assert python_re() == re2()
    best: dict[str, float] = {}
    for name, work in (("re", python_re), ("re2", re2), ("re2 capped", capped)):
        times = []
        for _ in range(RUNS):
            start = time.perf_counter()
            work()
            times.append(time.perf_counter() - start)
        best[name] = min(times)
    return best


GLOBS = ("*.py", "**/*.py", "src/**/*.{ts,tsx}", "test_*.py", "*.{js,jsx,ts,tsx}", "docs/*/*.md", "*.min.*")


def _globs() -> dict[str, tuple[float, float]]:
    """Per pattern: seconds to match every path of a 5000-file tree the old way and the new way."""
    parts = ("src", "tests", "docs", "lib", "pkg")
    paths = [
        f"{parts[i % 5]}/{parts[(i // 5) % 5]}/m{i % 13}/{'test_' if i % 4 == 0 else ''}file{i}."
        + ("py", "ts", "tsx", "md", "min.js", "txt")[i % 6]
        for i in range(5000)
    ]
    figures = {}
    for pattern in GLOBS:
        old = re.compile(translate(pattern), re.DOTALL)
        by_name = "/" not in pattern
        new = GlobMatcher.compile(pattern)

        def old_way(old: re.Pattern[str] = old, by_name: bool = by_name) -> list[bool]:
            # what GlobMatcher.matches did: the name or the path, then `re`
            return [old.fullmatch(p.rsplit("/", 1)[-1] if by_name else p) is not None for p in paths]

        def new_way(new: GlobMatcher = new) -> list[bool]:
            return [new.matches(p) for p in paths]

        assert old_way() == new_way()
        timings = []
        for work in (old_way, new_way):
            best = float("inf")
            for _ in range(RUNS):
                start = time.perf_counter()
                work()
                best = min(best, time.perf_counter() - start)
            timings.append(best)
        figures[pattern] = (timings[0], timings[1])
    return figures


def main() -> int:
    """Print the ratios; 0 always (this benchmark has no target to miss)."""
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        bash = anyio.run(_bash, root)
        dense = _grep(root, r"TODO check [35]")
        sparse = _grep(root, r"compute\(x4999\b")
    each = bash["bare"] / COMMANDS * 1000
    print(f"bash: {COMMANDS} `true` commands (best of {RUNS}); bare bash -c: {each:.1f} ms each")
    print(f"guarded / bare bash              = {bash['guarded'] / bash['bare']:.2f}x")
    limits_ratio = bash["limited"] / bash["guarded"]
    print(f"guarded with limits / without    = {limits_ratio:.2f}x (target <= 1.2x)")
    if "sandboxed" in bash:
        print(f"sandboxed / bare bash            = {bash['sandboxed'] / bash['bare']:.2f}x")
    else:
        print("sandboxed: bubblewrap cannot run here, not measured")
    print(
        f"grep: {FILES} files x {LINES} lines (best of {RUNS}); re, 2 lines in 7 match: {dense['re'] * 1000:.0f} ms"
    )
    print(f"re2 / re, 2 lines in 7 match, every match = {dense['re2'] / dense['re']:.2f}x")
    print(f"re2 / re, 2 lines in 7 match, as grep (first 101) = {dense['re2 capped'] / dense['re']:.4f}x")
    print(f"re2 / re, 1 line in {LINES} matches = {sparse['re2'] / sparse['re']:.2f}x")
    globs = _globs()
    old_total = sum(old for old, _ in globs.values())
    new_total = sum(new for _, new in globs.values())
    print(f"glob: {len(GLOBS)} patterns x 5000 paths (best of {RUNS}); old re: {old_total * 1000:.1f} ms")
    for pattern, (old, new) in globs.items():
        engine = "re2" if linear_only(pattern) else "re"
        print(f"glob {pattern!r} ({engine}) new / old = {new / old:.2f}x")
    ratio = new_total / old_total
    print(f"glob matching, all patterns, new / old = {ratio:.2f}x (target <= 1.5x)")
    return 0 if ratio <= 1.5 and limits_ratio <= 1.2 else 1


if __name__ == "__main__":
    main()
