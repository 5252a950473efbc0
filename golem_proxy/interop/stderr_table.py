"""What a wrapped MCP server wrote to its stderr (`ProcessOutput`, recorded by `golem-proxy
mcp`) as one SQL table, ``server_stderr``: one row per line, named as the flows table names a
flow (``trace``, ``route``, ``conn``: the MCP hop's), with the time of the chunk that began
the line (``t``, seconds since the recording started, as the flows' ``t``) and its ``text``.
`query` has it as a view beside ``flows``; `export --format parquet --table server_stderr`
writes it. Rows go through the same private newline-delimited JSON files as the flows'.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass, field
from typing import IO, Any

from ..events import ProcessOutput
from .flow_table import RowsWritten, write_rows

__all__ = ["LINE_CHARS", "LONGEST", "STDERR_COLUMNS", "StderrRows"]

STDERR_COLUMNS: tuple[tuple[str, str], ...] = (
    ("trace", "VARCHAR"),  # `flow_table.trace_name`
    ("route", "VARCHAR"),
    ("conn", "BIGINT"),
    ("t", "DOUBLE"),
    ("text", "VARCHAR"),
)
"""Name and DuckDB type of every column of ``server_stderr``, in order."""

LINE_CHARS = 1 << 20
"""The most characters of one line kept; the rest is cut with ``…`` (a process that writes
for ever without a newline)."""
LONGEST = 6 * LINE_CHARS + 65536
"""The longest row's bytes at most: a line of `LINE_CHARS` characters, each escaped in JSON
at worst as six bytes (``\u0001``), and its trace's name."""
_BATCH = 1000


@dataclass
class _Line:
    """A connection's line not ended yet: where it began and what it holds so far."""

    route: str
    t: float
    text: str = ""
    decoder: Any = field(default_factory=lambda: codecs.getincrementaldecoder("utf-8")("replace"))


class StderrRows:
    """The lines of the chunks given to `add` (in recording order), written as rows of
    ``trace`` to ``stream`` in batches; `finish` writes the lines not ended by a newline."""

    def __init__(self, trace: str, stream: IO[bytes]) -> None:
        self.trace = trace
        self.stream = stream
        self._open: dict[int, _Line] = {}
        self._rows: list[dict[str, Any]] = []
        self.written = RowsWritten(0, 0)

    def add(self, event: ProcessOutput) -> None:
        """Fold in a chunk a server wrote; a line takes the time of the chunk that began it
        (chunks split lines anywhere, characters too)."""
        line = self._open.get(event.conn)
        if line is None:
            line = self._open[event.conn] = _Line(event.route, event.t)
        *ended, rest = (line.text + line.decoder.decode(event.data)).split("\n")
        for text in ended:
            self._row(line.route, event.conn, line.t, text)
            line.t = event.t
        line.text = rest[: LINE_CHARS + 1]  # enough to be cut with "…" as a row
        if len(self._rows) >= _BATCH:
            self._write()

    def finish(self) -> RowsWritten:
        """Write what is left (a last line without its newline); returns the rows written
        in all, and the longest one's bytes."""
        for conn, line in self._open.items():
            text = line.text + line.decoder.decode(b"", final=True)
            if text:
                self._row(line.route, conn, line.t, text)
        self._open.clear()
        self._write()
        return self.written

    def _row(self, route: str, conn: int, t: float, text: str) -> None:
        text = text[:-1] if text.endswith("\r") else text
        if len(text) > LINE_CHARS:  # a long line may come whole in one chunk
            text = text[: LINE_CHARS - 1] + "…"
        self._rows.append({"trace": self.trace, "route": route, "conn": conn, "t": t, "text": text})

    def _write(self) -> None:
        if self._rows:
            now = write_rows(iter(self._rows), self.stream)
            before = self.written
            self.written = RowsWritten(before.rows + now.rows, max(before.longest, now.longest))
            self._rows = []
