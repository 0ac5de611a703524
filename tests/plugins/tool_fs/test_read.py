"""`read`: the recorded output format, windows, caps, binary refusal, directories and missing files."""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh.plugins.tool_fs import BINARY_FILE, FILE_NOT_FOUND, IO_ERROR, LIMIT_TOO_LARGE, OFFSET_OUT_OF_RANGE
from dsh.runtime.tools import INVALID_ARGUMENTS, ToolResult

from .harness import Fs, load

pytestmark = pytest.mark.anyio

# The two `tool/result`s of fixtures-harness/parallel-tool-calls/session.jsonl, recorded by the TypeScript DeepSeek
# Harness (MIT), where the workspace held a.txt ("alpha") and b.txt ("beta"); `{{cwd}}` stands for the workspace.
RECORDED = {
    "a.txt": (
        "<path>{{cwd}}/a.txt</path>\n<type>file</type>\n<content>\n1: alpha\n\n(End of file - total 1 lines)\n"
        "</content>",
        {"path": "{{cwd}}/a.txt", "offset": 1, "lines": [{"number": 1, "text": "alpha"}], "totalLines": 1},
    ),
    "b.txt": (
        "<path>{{cwd}}/b.txt</path>\n<type>file</type>\n<content>\n1: beta\n\n(End of file - total 1 lines)\n"
        "</content>",
        {"path": "{{cwd}}/b.txt", "offset": 1, "lines": [{"number": 1, "text": "beta"}], "totalLines": 1},
    ),
}


def numbered(count: int) -> str:
    return "".join(f"line {n}\n" for n in range(1, count + 1))


@pytest.mark.parametrize("name", ["a.txt", "b.txt"])
async def test_matches_the_recorded_result(fs: Fs, name: str) -> None:
    fs.write("a.txt", "alpha\n")
    fs.write("b.txt", "beta\n")
    text, meta = RECORDED[name]
    result = await fs.call("read", file_path=name)
    cwd = str(fs.root)
    assert result == ToolResult(
        text.replace("{{cwd}}", cwd),
        meta={**meta, "path": str(meta["path"]).replace("{{cwd}}", cwd)},
    )


async def test_a_window_says_where_to_continue(fs: Fs) -> None:
    fs.write("ten.txt", numbered(10))
    result = await fs.call("read", file_path="ten.txt", offset=3, limit=2)
    assert result.text == (
        f"<path>{fs.root}/ten.txt</path>\n<type>file</type>\n<content>\n3: line 3\n4: line 4\n\n"
        "(Showing lines 3-4 of 10. Use offset=5 to continue.)\n</content>"
    )
    assert result.meta["lines"] == [{"number": 3, "text": "line 3"}, {"number": 4, "text": "line 4"}]
    assert (result.meta["offset"], result.meta["totalLines"]) == (3, 10)
    tail = await fs.call("read", file_path="ten.txt", offset=9)
    assert tail.text.endswith("9: line 9\n10: line 10\n\n(End of file - total 10 lines)\n</content>")


async def test_line_endings_and_a_missing_final_newline(fs: Fs) -> None:
    fs.write("crlf.txt", "one\r\ntwo")
    result = await fs.call("read", file_path="crlf.txt")
    assert "<content>\n1: one\n2: two\n\n(End of file - total 2 lines)" in result.text
    fs.write("empty.txt", "")
    empty = await fs.call("read", file_path="empty.txt")
    assert "<content>\n\n(End of file - total 0 lines)\n</content>" in empty.text
    assert empty.meta["lines"] == []


async def test_the_default_limit_is_the_configured_maximum(workspace: Path) -> None:
    fs = load(workspace, {"read_max_lines": 3})
    fs.write("five.txt", numbered(5))
    result = await fs.call("read", file_path="five.txt")
    assert [line["number"] for line in result.meta["lines"]] == [1, 2, 3]
    assert "(Showing lines 1-3 of 5. Use offset=4 to continue.)" in result.text
    too_many = await fs.call("read", file_path="five.txt", limit=4)
    assert too_many.is_error
    assert too_many.code == LIMIT_TOO_LARGE
    assert too_many.text.startswith("limit 4 is more than the 3 lines one read returns")


async def test_long_lines_are_cut(workspace: Path) -> None:
    fs = load(workspace, {"read_max_line_chars": 5})
    fs.write("long.txt", "abcdefghij\nshort\n")
    result = await fs.call("read", file_path="long.txt")
    assert "1: abcde... (line truncated to 5 chars)\n2: short\n" in result.text


async def test_output_stops_at_the_byte_cap(workspace: Path) -> None:
    fs = load(workspace, {"read_max_bytes": 100})
    fs.write("many.txt", numbered(50))  # "N: line N\n" is 10-12 bytes
    result = await fs.call("read", file_path="many.txt")
    shown = result.meta["lines"]
    body = "".join(f"{line['number']}: {line['text']}\n" for line in shown)
    assert len(body.encode()) <= 100
    assert len(body.encode()) + len(f"{len(shown) + 1}: line {len(shown) + 1}\n") > 100
    last = shown[-1]["number"]
    assert (
        f"(Output capped at 100 bytes. Showing lines 1-{last} of 50. Use offset={last + 1} to continue.)"
        in (result.text)
    )


async def test_offsets_past_the_end_and_non_integers_are_refused(fs: Fs) -> None:
    fs.write("two.txt", "a\nb\n")
    past = await fs.call("read", file_path="two.txt", offset=3)
    assert (past.code, past.text) == (
        OFFSET_OUT_OF_RANGE,
        f"offset 3 is past the end of {fs.root}/two.txt, which has 2 lines",
    )
    fractional = await fs.call("read", file_path="two.txt", offset=1.5)
    assert fractional.code == INVALID_ARGUMENTS
    zero = await fs.call("read", file_path="two.txt", limit=0)
    assert zero.code == INVALID_ARGUMENTS
    whole = await fs.call("read", file_path="two.txt", offset=2.0)
    assert whole.meta["lines"] == [{"number": 2, "text": "b"}]


async def test_binary_files_are_refused(fs: Fs) -> None:
    fs.write("image.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    result = await fs.call("read", file_path="image.png")
    assert (result.is_error, result.code) == (True, BINARY_FILE)
    assert result.text == f"{fs.root}/image.png is a binary file; read only shows UTF-8 text"
    fs.write("latin1.txt", "ok\ncaf\xe9\n".encode("latin-1"))
    latin = await fs.call("read", file_path="latin1.txt")
    assert latin.code == BINARY_FILE
    assert latin.text.startswith(f"{fs.root}/latin1.txt is not UTF-8 text (invalid byte at line 2, column 4)")


async def test_a_directory_lists_its_entries(fs: Fs) -> None:
    fs.write("src/main.py", "")
    fs.write("README.md", "")
    fs.write(".hidden", "")
    listing = await fs.call("read", file_path=".")
    assert listing.text == (
        f"<path>{fs.root}</path>\n<type>directory</type>\n<entries>\n.hidden\nREADME.md\nsrc/\n\n(3 entries)\n"
        "</entries>"
    )
    window = await fs.call("read", file_path=str(fs.root), offset=2, limit=1)
    assert window.meta == {"path": str(fs.root), "offset": 2, "entries": ["README.md"], "totalEntries": 3}
    assert "(Showing entries 2-2 of 3. Use offset=3 to continue.)" in window.text


async def test_a_missing_file_names_similar_ones(fs: Fs) -> None:
    fs.write("config.yaml", "")
    fs.write("unrelated.txt", "")
    result = await fs.call("read", file_path="config.yml")
    assert (result.code, result.text) == (
        FILE_NOT_FOUND,
        f"File not found: {fs.root}/config.yml\n\nDid you mean one of these?\n{fs.root}/config.yaml",
    )
    bare = await fs.call("read", file_path="nothing/here.txt")
    assert bare.text == f"File not found: {fs.root}/nothing/here.txt"


async def test_an_operating_system_failure_is_an_error_result_with_its_reason(fs: Fs) -> None:
    name = "n" * 300  # longer than any file name the OS allows
    result = await fs.call("read", file_path=name)
    assert (result.is_error, result.code) == (True, IO_ERROR)
    assert result.text == f"File name too long: {fs.root}/{name}"
