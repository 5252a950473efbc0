"""Deciding held frames by typing commands while ``golem-proxy proxy --intercept`` logs.

One command a line on stdin; the answer is printed between the log lines. ``handle`` is pure
(a line in, lines of text out, the engine changed), so it is tested without a terminal; `run`
reads stdin in a thread (a terminal's file description is shared with the log's output, and
making it non-blocking for trio would make the log's writes fail).
"""

from __future__ import annotations

import json
import sys
from typing import Callable, Optional

import trio
from rich.text import Text

from ..analysis.filters import FilterError
from ..terminal import safe_text
from .frame_editor import console_edit, editor_command
from .intercept import Accept, Answer, Decision, Drop, Edit, InterceptEngine, InterceptError

__all__ = ["HELP", "InterceptConsole"]

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


class InterceptConsole:
    def __init__(self, engine: InterceptEngine, editor: Optional[list[str]] = None) -> None:
        """``editor``: the command ``edit N`` opens (default: ``$EDITOR``, when set)."""
        self.engine = engine
        self.editor = editor if editor is not None else editor_command()

    def handle(self, line: str) -> list[Text]:
        """Run one command line; returns what to print."""
        words = line.strip().split(None, 2)
        if not words or words[0] in ("list", "l"):
            return self._list()
        command, rest = words[0], words[1:]
        if command in ("help", "h", "?"):
            return [Text(HELP)]
        if command == "A" or (command in ("accept", "a") and rest == ["all"]):
            return [Text(f"accepted {self.engine.accept_all()} held frames", "green")]
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
        if make is None or not rest or not rest[0].lstrip("#").isdigit():
            return [Text(f"not a command: {safe_text(line.strip(), 80)} (help: ?)", "yellow")]
        number = int(rest[0].lstrip("#"))
        decision = make(rest[1].encode("utf-8") if len(rest) > 1 else None)
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
            ident = "" if frame.message.id is None else f" id={frame.message.id}"
            text = (
                f"  #{frame.id} {frame.route} conn {frame.conn} {frame.direction.arrow} "
                f"{frame.method or '?'}{ident} held {frame.age():.1f} s"
            )
            lines.append(Text(safe_text(text, _LIMIT)))
        return lines

    def _show(self, rest: list[str]) -> list[Text]:
        number = int(rest[0].lstrip("#")) if rest and rest[0].lstrip("#").isdigit() else None
        found = [h for h in self.engine.held() if h.id == number]
        if not found:
            return [Text(f"no frame #{rest[0] if rest else '?'} is held", "yellow")]
        payload = found[0].payload
        try:
            shown = json.dumps(json.loads(payload), ensure_ascii=False)
        except ValueError:
            shown = payload.decode("utf-8", "replace")
        return [Text(safe_text(shown))]

    def _filter(self, expression: str) -> list[Text]:
        if expression in ("", "off"):
            self.engine.clear_filter()
            return [Text("intercept filter off (held frames stay held)", "green")]
        try:
            self.engine.set_filter(expression)
        except FilterError as exc:
            return [Text(f"bad filter: {safe_text(str(exc), _LIMIT)}", "yellow")]
        return [Text(f"intercept filter: {self.engine.filter}", "green")]

    async def run(self, print_text: Callable[[Text], None]) -> None:
        """Read commands from stdin until it ends, printing each answer with ``print_text``."""
        while True:
            line = await trio.to_thread.run_sync(sys.stdin.readline, abandon_on_cancel=True)
            if not line:
                return
            line, note = await console_edit(line, self.engine, self.editor)
            if note is not None:
                print_text(Text(safe_text(note, _LIMIT), "yellow"))
                continue
            for text in self.handle(line):
                print_text(text)
