"""TerminalOutput: the log's stdout never blocks its writer, drops and counts lines when the
reader stops, says so once it reads again, and goes quiet on a closed pipe."""

from __future__ import annotations

import contextlib
import io
import os
import pty
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

import pytest
from rich.text import Text

from golem_proxy.live.log_output import TerminalOutput

NOTICE = re.compile(r"golem-proxy: (\d+) log lines dropped \(output was blocked for ([\d.]+) s\)")


@pytest.fixture
def pipe() -> Iterator[tuple[int, TextIO]]:
    """A pipe: its read end, and its write end as a text stream like sys.stdout."""
    read_end, write_end = os.pipe()
    stream = os.fdopen(write_end, "w", encoding="utf-8")
    yield read_end, stream
    for close in (stream.close, lambda: os.close(read_end)):
        with contextlib.suppress(OSError):  # a test may have closed it already
            close()


def write_lines(output: TerminalOutput, count: int, width: int = 100) -> None:
    """Write ``count`` numbered lines in a thread; fail if that thread gets stuck."""

    def run() -> None:
        for number in range(count):
            output.write(f"line {number:06d} ".ljust(width, ".") + "\n")

    writer = threading.Thread(target=run, daemon=True)
    writer.start()
    writer.join(30)
    assert not writer.is_alive(), "TerminalOutput.write blocked"


def read_until(read_end: int, pattern: re.Pattern[str], timeout: float = 30) -> str:
    """Read the pipe until ``pattern`` appears in what was read (or the deadline passes)."""
    data = bytearray()
    deadline = time.monotonic() + timeout
    os.set_blocking(read_end, False)
    while time.monotonic() < deadline:
        try:
            chunk = os.read(read_end, 65536)
        except BlockingIOError:
            if pattern.search(data.decode("utf-8", "replace")):
                break
            time.sleep(0.01)
            continue
        if not chunk:
            break
        data += chunk
    return data.decode("utf-8", "replace")


def read_to_the_end(output: TerminalOutput, stream: TextIO, read_end: int) -> str:
    """Close the output (it writes what is queued) and the stream, reading everything."""

    def close() -> None:
        output.close(timeout=30)
        stream.close()

    closer = threading.Thread(target=close, daemon=True)
    closer.start()
    text = read_until(read_end, re.compile(r"(?!)"))  # never matches: read until EOF
    closer.join(30)
    return text


def wait_for(predicate: object, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.01)


def test_a_pipe_nobody_reads_costs_lines_not_a_blocked_writer(
    pipe: tuple[int, TextIO],
) -> None:
    read_end, stream = pipe
    output = TerminalOutput(stream, max_lines=100)
    write_lines(output, 3000, width=1000)  # 3 MB: far more than the pipe and the queue hold
    assert output.dropped > 0
    wait_for(lambda: output._writing_since is not None)  # the writer is stuck in the pipe
    text = read_until(read_end, NOTICE)
    (notice,) = NOTICE.findall(text)
    assert int(notice[0]) == output.dropped
    written = re.findall(r"^line (\d+) ", text, re.MULTILINE)
    # Lines arrive in order, none twice; what is missing is exactly what the notice counts.
    assert [int(n) for n in written] == sorted({int(n) for n in written})
    assert len(written) + output.dropped == 3000
    assert text.endswith(NOTICE.search(text).group(0) + "\n")  # type: ignore[union-attr]
    # Reading again: new lines flow, and the notice is not repeated.
    output.write("after\n")
    later = read_until(read_end, re.compile("after\n"))
    assert later == "after\n"
    assert output.close(timeout=10)


def test_the_notice_says_how_long_the_output_was_blocked(pipe: tuple[int, TextIO]) -> None:
    read_end, stream = pipe
    now = [100.0]
    output = TerminalOutput(stream, max_lines=50, clock=lambda: now[0])
    write_lines(output, 2000, width=2000)  # 50 lines (100 KB) more than fill the pipe
    wait_for(lambda: output._writing_since is not None)
    now[0] = 112.3
    text = read_until(read_end, NOTICE)
    match = NOTICE.search(text)
    assert match is not None and match.group(2) == "12.3"
    output.close(timeout=10)


def test_the_byte_bound_drops_too(pipe: tuple[int, TextIO]) -> None:
    read_end, stream = pipe
    output = TerminalOutput(stream, max_lines=1_000_000, max_bytes=8 * 1024)
    write_lines(output, 2000, width=1000)
    assert output.dropped > 0
    assert output._queued_bytes <= 8 * 1024
    text = read_to_the_end(output, stream, read_end)
    # The pipe may have taken lines between spells: every spell has its notice.
    assert sum(int(n) for n, _ in NOTICE.findall(text)) == output.dropped


def test_a_closed_pipe_stops_the_output_quietly(
    pipe: tuple[int, TextIO], capfd: pytest.CaptureFixture[str]
) -> None:
    read_end, stream = pipe
    os.close(read_end)
    output = TerminalOutput(stream)
    output.write("nobody reads this\n")
    wait_for(lambda: output.closed)
    write_lines(output, 100)  # discarded, without raising
    assert output.dropped == 0
    assert output.close(timeout=10)
    assert capfd.readouterr().err == ""


def test_lone_surrogates_are_written_as_escapes(pipe: tuple[int, TextIO]) -> None:
    read_end, stream = pipe
    output = TerminalOutput(stream)
    output.write("bad \udfff here\n")
    assert read_until(read_end, re.compile("here\n")) == "bad \\udfff here\n"
    output.close(timeout=10)


def test_a_stream_without_a_descriptor_still_gets_every_line() -> None:
    buffer = io.StringIO()
    output = TerminalOutput(buffer)
    console = output.console()
    for number in range(5):
        console.print(Text(f"[red]{number}"))
    assert output.close(timeout=10)
    assert buffer.getvalue() == "".join(f"[red]{n}\n" for n in range(5))


@pytest.fixture
def plain_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "COLORTERM"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")


@pytest.mark.usefixtures("plain_environment")
def test_colours_on_a_terminal() -> None:
    controller, terminal = pty.openpty()
    stream = os.fdopen(terminal, "w", encoding="utf-8")
    try:
        output = TerminalOutput(stream)
        assert output.isatty()
        output.console().print(Text("exchange", "red"))
        text = read_until(controller, re.compile("exchange.*\n"))
        assert "\x1b[" in text and "exchange" in text
        output.close(timeout=10)
    finally:
        stream.close()
        os.close(controller)


@pytest.mark.usefixtures("plain_environment")
def test_no_colours_on_a_pipe(pipe: tuple[int, TextIO]) -> None:
    read_end, stream = pipe
    output = TerminalOutput(stream)
    assert not output.isatty()
    output.console().print(Text("exchange", "red"))
    assert read_until(read_end, re.compile("\n")) == "exchange\n"
    output.close(timeout=10)


def test_no_stdout_at_all_discards_quietly() -> None:
    output = TerminalOutput(None)  # what sys.stdout is when the process has no fd 1
    output.console().print("nobody sees this")
    assert output.closed and not output.isatty()
    assert output.close(timeout=10)


def test_another_write_error_stops_the_output_and_says_why_once(
    capfd: pytest.CaptureFixture[str],
) -> None:
    buffer = io.StringIO()
    buffer.close()  # every write now raises ValueError
    output = TerminalOutput(buffer)
    output.write("lost\n")
    wait_for(lambda: output.closed)
    output.write("also lost\n")
    assert output.close(timeout=10)
    assert capfd.readouterr().err.count("golem-proxy: log output stopped:") == 1


def test_lines_still_queued_at_exit_are_counted_on_stderr(
    pipe: tuple[int, TextIO], capfd: pytest.CaptureFixture[str]
) -> None:
    """A reader that never reads again: close gives up after its timeout and says how many
    lines it could not write (before, they vanished without a word)."""
    _, stream = pipe
    output = TerminalOutput(stream, max_lines=100)
    write_lines(output, 50, width=10_000)  # 500 KB: the pipe holds 64 KB, the queue the rest
    wait_for(lambda: output._writing_since is not None)  # the writer is stuck in the pipe
    queued = output._queued_lines
    assert not output.close(timeout=0.2)
    found = re.search(r"golem-proxy: (\d+) log lines not written", capfd.readouterr().err)
    assert found is not None
    assert int(found.group(1)) == queued > 0


def test_a_stuck_stderr_that_is_the_log_itself_does_not_keep_the_process_from_exiting(
    tmp_path: Path,
) -> None:
    """`mcp` logs to stderr: when nobody reads it, closing gives up after its timeout, and
    its notice of the lines not written is not written to that same stuck pipe (it blocked
    there for good, and the process never exited)."""
    done = tmp_path / "closed"
    script = (
        "import sys\n"
        "from golem_proxy.live.log_output import TerminalOutput\n"
        "output = TerminalOutput(sys.stderr, max_lines=100)\n"
        "for n in range(50):\n"
        "    output.write('x' * 10_000 + '\\n')\n"
        "output.close(timeout=0.2)\n"
        f"open({str(done)!r}, 'w').close()\n"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", script],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,  # never read
        cwd=Path(__file__).resolve().parents[2],
    )
    try:
        wait_for(lambda: done.exists() or child.poll() is not None, timeout=30)
        assert done.exists()
    finally:
        child.kill()
        child.wait()
        assert child.stderr is not None
        child.stderr.close()
