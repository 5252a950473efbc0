"""Deciding held frames by typing commands while ``golem-proxy proxy --intercept`` logs.

One command a line on stdin; the answer is printed between the log lines. ``handle`` is pure
(a line in, lines of text out, the engine changed), so it is tested without a terminal; `run`
reads stdin in a thread (a terminal's file description is shared with the log's output, and
making it non-blocking for trio would make the log's writes fail).

A line typed there is input like a frame: whatever it holds (bytes that are not UTF-8, a
number in digits other than ASCII, a 5000-digit number, JSON nested 100,000 deep, a line of
gigabytes) costs one line of error, never a held frame or the proxy.
"""

from __future__ import annotations

import json
import os
import sys
from typing import BinaryIO, Callable, Optional

import trio
from rich.text import Text

from ..analysis.filters import FilterError
from ..recording.reader import check_line
from ..recording.schema import RecordingError
from ..terminal import counted, safe_text
from .frame_editor import console_edit, editor_command
from .intercept import Accept, Answer, Decision, Drop, Edit, InterceptEngine, InterceptError

__all__ = ["HELP", "MAX_LINE", "InterceptConsole", "frame_number", "read_line", "stdin_of_our_own"]

HELP = """\
intercept commands (N: the number of a held frame, as in "held #N"):
  list | l               the held frames and how long each has waited
  show N | s N           the frame's JSON
  accept N | a N         send it as it came;  accept all | A: every held frame
  edit N JSON | e N JSON send JSON in its place (validated first); edit N: in $EDITOR
  drop N | d N           send nothing: the peer never sees it
  answer N JSON          answer a held request with JSON (a response; its id is filled in)
  filter EXPR | filter off   hold what EXPR selects from now on (docs/filters.md), or nothing"""

_LIMIT = 400
"""Characters of a peer's text shown on one line."""
MAX_LINE = 64 * 1024 * 1024 + 4096
"""Longest command line read: an edit of the largest frame a profile allows, and its command.
A longer line is read on to its end without being kept, and refused."""
_NUMBER_DIGITS = 12
"""Held frames are numbered from 1 by a counter: twelve digits are more than a proxy reaches."""


def frame_number(word: str) -> Optional[int]:
    """The N of ``N`` or ``#N``: ASCII digits only (``²`` and ``٣`` are digits to
    ``str.isdigit`` but not numbers here), at most twelve of them; None for anything else."""
    digits = word[1:] if word.startswith("#") else word
    if not digits or len(digits) > _NUMBER_DIGITS or not (digits.isascii() and digits.isdigit()):
        return None
    return int(digits)


def read_line(stream: BinaryIO, limit: int = MAX_LINE) -> tuple[bytes, int]:
    """Read one line from ``stream``. Returns ``(line, 0)`` (``b""`` at the end of input), or
    ``(b"", size)`` for a line of ``size`` bytes longer than ``limit``, read to its end and
    dropped: what a line costs is bounded by ``limit`` whatever arrives (a 100 MiB line with
    the 64 MiB limit peaked at 131 MiB over the proxy's baseline: the buffered read grows its
    buffer by doubling)."""
    line = stream.readline(limit + 1)
    if len(line) <= limit or line.endswith(b"\n"):
        return line, 0
    size = len(line)
    while not line.endswith(b"\n"):
        line = stream.readline(1 << 20)
        if not line:
            break
        size += len(line)
    return b"", size


class InterceptConsole:
    def __init__(self, engine: InterceptEngine, editor: Optional[list[str]] = None) -> None:
        """``editor``: the command ``edit N`` opens (default: ``$EDITOR``, when set)."""
        self.engine = engine
        self.editor = editor if editor is not None else editor_command()

    def handle_bytes(self, raw: bytes) -> list[Text]:
        """Run one command line as read from stdin; returns what to print. Never raises: a
        line that is not UTF-8, or one that fails in a way nobody foresaw, is one line of
        error, and the held frames and the proxy are untouched."""
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            return [Text(f"not UTF-8 (byte {exc.start}): the line was ignored", "yellow")]
        try:
            return self.handle(line)
        except Exception as exc:  # a bug here costs this line, not the session
            reason = safe_text(f"{type(exc).__name__}: {exc}", _LIMIT)
            return [Text(f"internal error on this line, ignored ({reason})", "red")]

    def handle(self, line: str) -> list[Text]:
        """Run one command line; returns what to print."""
        words = line.strip().split(None, 2)
        if not words or words[0] in ("list", "l"):
            return self._list()
        command, rest = words[0], words[1:]
        if command in ("help", "h", "?"):
            return [Text(HELP)]
        if command == "A" or (command in ("accept", "a") and rest == ["all"]):
            accepted = self.engine.accept_all()
            return [Text(f"accepted {counted(accepted, 'held frame')}", "green")]
        if command == "filter":
            return self._filter(line.strip()[len("filter") :].strip())
        actions: dict[str, Callable[[Optional[bytes]], Optional[Decision]]] = {
            "accept": lambda _: Accept(),
            "a": lambda _: Accept(),
            "drop": lambda _: Drop(),
            "d": lambda _: Drop(),
            "edit": lambda data: None if data is None else Edit(data),
            "e": lambda data: None if data is None else Edit(data),
            "answer": lambda data: None if data is None else Answer(data),
        }
        if command in ("show", "s"):
            return self._show(rest)
        make = actions.get(command)
        if make is None or not rest:
            return [Text(f"not a command: {safe_text(line.strip(), 80)} (help: ?)", "yellow")]
        number = frame_number(rest[0])
        if number is None:
            return [_not_a_number(rest[0])]
        # surrogatepass: a str handed in (not read from stdin) may hold lone surrogates; the
        # JSON check then refuses the bytes they become, in one line.
        decision = make(rest[1].encode("utf-8", "surrogatepass") if len(rest) > 1 else None)
        if decision is None:
            return [Text(f"{command} needs the JSON after the number", "yellow")]
        try:
            self.engine.decide(number, decision)
        except InterceptError as exc:
            return [Text(safe_text(str(exc), _LIMIT), "yellow")]
        return [Text(f"#{number}: {type(decision).__name__.lower()}", "green")]

    def _list(self) -> list[Text]:
        held = self.engine.held()
        chosen = self.engine.filter
        head = f"intercept filter: {chosen if chosen is not None else 'off'}; "
        lines = [Text(head + f"{len(held)} held", "bold")]
        for frame in held:
            shown_id = frame.view.message.id  # as the log shows it: redacted
            ident = "" if shown_id is None else f" id={shown_id}"
            text = (
                f"  #{frame.id} {frame.route} conn {frame.conn} {frame.direction.arrow} "
                f"{frame.method or '?'}{ident} held {frame.age():.1f} s"
            )
            lines.append(Text(safe_text(text, _LIMIT)))
        return lines

    def _show(self, rest: list[str]) -> list[Text]:
        if not rest:
            return [Text("show needs the number of a held frame", "yellow")]
        number = frame_number(rest[0])
        if number is None:
            return [_not_a_number(rest[0])]
        found = [h for h in self.engine.held() if h.id == number]
        if not found:
            return [Text(f"no frame #{number} is held", "yellow")]
        # As the connection's frames are logged and recorded: redacted (``--redact``).
        view = found[0].view
        payload = view.payload
        try:
            # A peer's frame may nest deeper than json recurses: judged before parsing.
            check_line(payload)
            shown = json.dumps(json.loads(payload), ensure_ascii=False)
        except (RecordingError, ValueError, RecursionError):
            shown = payload.decode("utf-8", "replace")
        lines = [Text(safe_text(shown))]
        if view.redacted:
            what = safe_text(", ".join(view.redacted), _LIMIT)
            lines.append(Text(f"(redacted: {what}; an edit sends what you type)", "dim"))
        return lines

    def _filter(self, expression: str) -> list[Text]:
        if expression in ("", "off"):
            self.engine.clear_filter()
            return [Text("intercept filter off (held frames stay held)", "green")]
        try:
            self.engine.set_filter(expression)
        except FilterError as exc:
            return [Text(f"bad filter: {safe_text(str(exc), _LIMIT)}", "yellow")]
        return [Text(f"intercept filter: {self.engine.filter}", "green")]

    async def run(
        self, print_text: Callable[[Text], None], stream: Optional[BinaryIO] = None
    ) -> None:
        """Read commands from ``stream`` (stdin's bytes) until it ends, printing each answer
        with ``print_text``."""
        if stream is None and sys.stdin is None:  # started with stdin closed: nothing to read
            return
        source = stdin_of_our_own() if stream is None else stream
        while True:
            line, dropped = await trio.to_thread.run_sync(read_line, source, abandon_on_cancel=True)
            if dropped:
                print_text(
                    Text(f"line too long ({dropped} bytes, at most {MAX_LINE}): ignored", "yellow")
                )
                continue
            if not line:
                return
            try:
                typed = line.decode("utf-8")
            except UnicodeDecodeError:
                typed = None  # `handle_bytes` says so
            if typed is not None:
                edited, note = await console_edit(typed, self.engine, self.editor)
                if note is not None:
                    print_text(Text(safe_text(note, _LIMIT), "yellow"))
                    continue
                line = edited.encode("utf-8")
            for text in self.handle_bytes(line):
                print_text(text)


def _not_a_number(word: str) -> Text:
    return Text(f"not a frame number: {safe_text(repr(word), 40)} (help: ?)", "yellow")


def stdin_of_our_own() -> BinaryIO:
    """stdin's bytes through a reader of its own, on a duplicate of its descriptor. The thread
    that waits for a line is abandoned at a stop, still waiting, holding its reader's lock;
    were that reader ``sys.stdin``'s, the interpreter, closing ``sys.stdin`` at exit, would
    find the lock taken and abort (``Fatal Python error: _enter_buffered_busy``, exit -6)."""
    try:
        return open(os.dup(sys.stdin.fileno()), "rb")  # the abandoned thread keeps it
    except (OSError, ValueError, AttributeError):  # no descriptor (a test's stand-in)
        return sys.stdin.buffer
