"""The one table layout of the command line (`show`, `stats`, `check`, `export`, `samples`,
`verify`, `diff`): columns laid out by their content and by priority, never cut.

Piped or redirected (no width), every value is printed whole at its natural width, like
``git log | cat``: a script or a file gets everything. On a terminal the table fits the width,
giving up space in this order until it does:

1. short headings (``resp B`` → ``←B``);
2. compact values where a column has them (sizes ``1.5K``, times with fewer digits);
3. one space between columns instead of two;
4. the wrappable columns (names, outcomes, messages) wrap over several lines, the lowest
   priority first, the widest of a priority first, never below their floor.

No column is ever dropped and no value cut: numbers do not wrap, and a table that still does
not fit makes lines longer than the terminal (it folds them) rather than lose a value.

Rows are plain strings with styled ranges, not rich Tables: rich measures every cell of every
row (about a millisecond a row), which for a large trace is minutes, and a fixed layout lets
`show` print its rows in batches that line up.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Optional, Union

from rich.cells import cell_len, chop_cells
from rich.console import Console
from rich.text import Span, Text

__all__ = [
    "Cell",
    "Column",
    "ColumnTable",
    "print_line",
    "print_table",
    "print_unfolded",
    "terminal_width",
    "wrap_cell",
]

Cell = Union[str, Text]
"""A cell: plain text, or a Text whose (one) style colours the whole cell."""

# Where a wrapped value may break: after these characters (``geometry.`` / ``create_box``,
# ``INVALID_PARAMS `` / ``(in result)``, ``InvalidEnvelope(`` / ``BothResultAndError)``), and
# only where a piece is still too long, after ``_`` or ``-``, then anywhere.
_PIECE = re.compile(r"\(?[^ .:/,(]*[ .:/,(]?")
_SMALL_PIECE = re.compile(r"[^_-]*[_-]?")


@dataclass(frozen=True)
class Column:
    """How one column is laid out."""

    heading: str
    right: bool = False
    """Right-aligned (numbers)."""
    wrap: bool = False
    """May wrap over several lines on a narrow terminal (text); otherwise always whole."""
    short: Optional[str] = None
    """The heading when space is short."""
    compact: Optional[Callable[[str], str]] = None
    """A shorter form of a value when space is short (``1536`` → ``1.5K``)."""
    priority: int = 1
    """Wrappable columns with a lower priority wrap first."""
    floor: int = 10
    """The narrowest a wrapping column gets."""


def terminal_width(out: Console) -> Optional[int]:
    """The width to fit for ``out``: its width when it writes to a terminal, None (never cut,
    never wrapped) when it writes to a pipe or a file. Asked of the file itself, not of
    rich's ``is_terminal``: FORCE_COLOR (common in CI) asks for colours, not for a log or a
    table folded to 80 columns in a file."""
    isatty = getattr(out.file, "isatty", None)
    try:
        return out.width if isatty is not None and isatty() else None
    except (OSError, ValueError):
        return None


def print_line(out: Console, line: str) -> None:
    """Print ``line`` as it is (no markup): folded to a terminal's width, one line in a pipe
    or a file (a command's closing line on stderr)."""
    out.print(Text(line), soft_wrap=terminal_width(out) is None)


def print_unfolded(out: Console, line: Text) -> None:
    """Print ``line`` on one line, never wrapped. Where rich would write exactly its
    characters (a pipe or a file without colours, no tab to expand, nothing captured), they
    are written straight to the output: rich's rendering of a live log's line costs about 60
    times the write (~190 µs against ~3 µs on the benchmark machine), and under a burst of
    small calls that was a fifth of what the observing process did."""
    plain = line.plain
    if (
        out.color_system is None
        and not out.quiet
        and not out.record
        and "\t" not in plain
        and terminal_width(out) is None
    ):
        out.file.write(plain + "\n")
        out.file.flush()  # as rich does after every print: a --log file is read as it grows
        return
    out.print(line, soft_wrap=True, highlight=False)


def wrap_cell(text: str, width: int) -> list[str]:
    """``text`` in lines of at most ``width`` cells, broken after ``.``, spaces and the like
    where it can, after ``_`` where it must, anywhere as a last resort. Nothing is dropped but
    the spaces at a break."""
    if cell_len(text) <= width:
        return [text]
    pieces: list[str] = []
    for piece in _PIECE.findall(text):
        if cell_len(piece.rstrip()) <= width:
            pieces.append(piece)
            continue
        for small in _SMALL_PIECE.findall(piece):
            # One pass over a piece however long (a hostile trace's megabyte-long name).
            pieces.extend(chop_cells(small, width) if cell_len(small) > width else [small])
    lines: list[str] = []
    line = ""
    for piece in pieces:
        if not piece:
            continue
        if line and cell_len(line + piece.rstrip()) > width:
            lines.append(line.rstrip())
            line = ""
        line += piece
    lines.append(line.rstrip())
    return lines


def _shorter(column: Column, text: str) -> str:
    """The compact form of a value when the column has one and it is shorter."""
    if column.compact is None or not text:
        return text
    short = column.compact(text)
    return short if cell_len(short) < cell_len(text) else text


class ColumnTable:
    """A table for one output: measure rows (`measure`), then render them (`heading`,
    `render`). Measuring more rows later only ever widens the natural widths, so a command
    can print a large table in batches."""

    def __init__(self, columns: Sequence[Column], width: Optional[int]) -> None:
        self.columns = tuple(columns)
        self.width = width
        self._values = [0] * len(self.columns)
        """The widest value of each column, in full and in its compact form."""
        self._compact = [0] * len(self.columns)
        self.gap = "  "
        self.short_headings = False
        self.compact_values = False
        self.widths: list[int] = []
        self.settled = False
        self._fitted_for: Optional[tuple[int, ...]] = None
        self._fit()

    def measure(self, rows: Iterable[Sequence[Cell]]) -> bool:
        """Take the rows' values into account; True when the layout changed (a command that
        streams may then print the heading again)."""
        values, compact, columns = self._values, self._compact, self.columns
        # Piped, values are never compacted: do not spend time on their compact forms.
        shorter = self.width is not None
        for row in rows:
            for index, cell in enumerate(row):
                text = cell.plain if isinstance(cell, Text) else cell
                size = _width(text)
                if size > values[index]:
                    values[index] = size
                if shorter and columns[index].compact is not None:
                    size = cell_len(_shorter(columns[index], text))
                if size > compact[index]:
                    compact[index] = size
        return self._fit()

    def settle(self) -> None:
        """Keep the layout from now on unless a value no longer fits (a command that streams
        rows and has printed its heading): on a terminal, the spare width goes to the
        wrappable columns of the highest priority, so that longer values met later fit
        there or wrap, and only a number that outgrows its column changes the layout."""
        self.settled = True
        self._spread()

    def _fit(self) -> bool:
        key = (*self._values, *self._compact)
        if key == self._fitted_for:
            return False
        self._fitted_for = key
        if self.settled and not self._outgrown():
            return False
        before = (tuple(self.widths), self.gap, self.short_headings, self.compact_values)
        self._lay_out()
        if self.settled:
            self._spread()
        return before != (tuple(self.widths), self.gap, self.short_headings, self.compact_values)

    def _outgrown(self) -> bool:
        """Whether a value measured since the layout was settled does not fit it: any value
        piped, a value that cannot wrap on a terminal."""
        values = self._compact if self.compact_values else self._values
        return any(
            value > width and (self.width is None or not column.wrap)
            for column, value, width in zip(self.columns, values, self.widths)
        )

    def _spread(self) -> None:
        if self.width is None:
            return
        spare = self.width - self._total()
        wrapping = [column.priority for column in self.columns if column.wrap]
        if spare <= 0 or not wrapping:
            return
        chosen = [i for i, c in enumerate(self.columns) if c.wrap and c.priority == max(wrapping)]
        for turn in range(spare):
            self.widths[chosen[turn % len(chosen)]] += 1

    def _lay_out(self) -> None:
        """Choose the widths: each step of the module docstring in turn, until it fits."""
        self.gap, self.short_headings, self.compact_values = "  ", False, False
        self.widths = self._widths()
        if self.width is None or self._total() <= self.width:
            return
        self.short_headings = True
        self.widths = self._widths()
        if self._total() <= self.width:
            return
        self.compact_values = True
        self.widths = self._widths()
        if self._total() <= self.width:
            return
        self.gap = " "
        if self._total() > self.width:
            self._wrap_columns(self._total() - self.width)

    def _widths(self) -> list[int]:
        values = self._compact if self.compact_values else self._values
        return [
            max(value, cell_len(self._heading_of(column)))
            for column, value in zip(self.columns, values)
        ]

    def _wrap_columns(self, excess: int) -> None:
        """Narrow the wrappable columns by ``excess`` cells in all, lowest priority and widest
        first, none below its floor (nor its heading)."""
        floors = [
            max(min(column.floor, width), cell_len(self._heading_of(column)))
            for column, width in zip(self.columns, self.widths)
        ]
        candidates = [i for i, column in enumerate(self.columns) if column.wrap]
        for priority in sorted({self.columns[i].priority for i in candidates}):
            group = [i for i in candidates if self.columns[i].priority == priority]
            while excess > 0:
                room = [i for i in group if self.widths[i] > floors[i]]
                if not room:
                    break
                widest = max(room, key=lambda i: self.widths[i])
                self.widths[widest] -= 1
                excess -= 1
            if excess <= 0:
                return

    def _total(self) -> int:
        return sum(self.widths) + len(self.gap) * (len(self.columns) - 1)

    def _heading_of(self, column: Column) -> str:
        return (column.short or column.heading) if self.short_headings else column.heading

    @property
    def line_width(self) -> int:
        """The width of a full row, gaps included."""
        return self._total()

    def heading(self, style: str = "bold") -> Text:
        """The heading line (its columns wrap like values, which they never need to)."""
        return self._render([[self._heading_of(c) for c in self.columns]], style, values=False)

    def rule(self) -> Text:
        """A dim line under the heading, as wide as the table (or the terminal)."""
        width = self._total() if self.width is None else min(self.width, self._total())
        return Text("─" * width, style="dim")

    def render(self, rows: Iterable[Sequence[Cell]], style: str = "") -> Text:
        """The rows as one Text (a line per row, more where a cell wraps), each cell styled
        as its Text was, ``style`` over every row. Measure them first, or a value wider than
        its column pushes the rest of its line right (it is never cut)."""
        return self._render(rows, style, values=True)

    def _render(self, rows: Iterable[Sequence[Cell]], style: str, *, values: bool) -> Text:
        lines: list[str] = []
        spans: list[Span] = []
        at = 0
        for row in rows:
            for line, ranges in self._row_lines(row, self.compact_values and values):
                spans.extend(Span(at + start, at + end, cell) for start, end, cell in ranges)
                if style and line:
                    spans.append(Span(at, at + len(line), style))
                lines.append(line)
                at += len(line) + 1
        return Text("\n".join(lines), spans=spans)

    def _row_lines(
        self, row: Sequence[Cell], compact: bool
    ) -> list[tuple[str, list[tuple[int, int, str]]]]:
        """The lines of one row (one, unless a cell wraps) and the styled ranges in each."""
        cells: list[tuple[list[str], str]] = []
        height = 1
        fitting = self.width is not None
        for column, width, cell in zip(self.columns, self.widths, row):
            if isinstance(cell, Text):
                text, style = cell.plain, str(cell.style) if cell.style else ""
            else:
                text, style = cell, ""
            if compact and column.compact is not None:
                text = _shorter(column, text)
            if fitting and column.wrap and _width(text) > width:
                parts = wrap_cell(text, width)
                height = max(height, len(parts))
            else:
                parts = [text]
            cells.append((parts, style))
        out: list[tuple[str, list[tuple[int, int, str]]]] = []
        gap = self.gap
        step = len(gap)
        for number in range(height):
            pieces: list[str] = []
            ranges: list[tuple[int, int, str]] = []
            at = 0
            for (parts, style), column, width in zip(cells, self.columns, self.widths):
                part = parts[number] if number < len(parts) else ""
                padding = " " * (width - _width(part))
                if column.right:
                    piece = padding + part
                    if style and part:
                        ranges.append((at + len(padding), at + len(piece), style))
                else:
                    piece = part + padding
                    if style and part:
                        ranges.append((at, at + len(part), style))
                pieces.append(piece)
                at += len(piece) + step
            out.append((gap.join(pieces).rstrip(), ranges))
        return out


def _width(text: str) -> int:
    """Terminal cells of ``text``; plain ASCII (almost every value) without rich's tables."""
    return len(text) if text.isascii() else cell_len(text)


def print_table(
    out: Console,
    columns: Sequence[Column],
    rows: Sequence[Sequence[Cell]],
    title: Optional[Text] = None,
) -> None:
    """Print ``title`` (when given), a heading and ``rows``, laid out for ``out``."""
    table = ColumnTable(columns, terminal_width(out))
    table.measure(rows)
    if title is not None:
        out.print(title, soft_wrap=True)
    out.print(table.heading(), soft_wrap=True)
    out.print(table.rule(), soft_wrap=True)
    if rows:
        out.print(table.render(rows), soft_wrap=True)
