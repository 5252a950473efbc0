"""Flows as one SQL table: the rows `export --format parquet` writes and `query` reads.

A row is a flow exactly as `show --json` gives it (`flow_to_json`): the same number, time,
method, id, status, error flag, latency and sizes, with the request's ``params`` and the
response's ``result`` and ``error`` as JSON text, plus the trace it came from. Rows go through
a private newline-delimited JSON file that DuckDB reads with the column types below, so
memory holds a flow and about a mebibyte of rows at a time on our side and what DuckDB keeps
on its side.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
from collections.abc import Iterator
from typing import IO, Any, NamedTuple, Optional

from ..analysis.proxy_notes import step_names
from ..analysis.trace import FlowReader, numbers_named
from ..analysis.two_layer_json import layered_json
from ..events import ProcessOutput
from ..recording.files import check_replaceable
from ..recording.format import DEFAULT_MAX_LINE

__all__ = [
    "ADDED_COLUMNS",
    "COLUMNS",
    "MAX_ROW",
    "ROW_GROUP_BYTES",
    "SMALLEST_BUFFER",
    "FlowTableError",
    "RowsWritten",
    "column_spec",
    "flow_rows",
    "one_line",
    "private_directory",
    "rows_relation",
    "trace_name",
    "write_parquet",
    "write_rows",
]

COLUMNS: tuple[tuple[str, str], ...] = (
    ("trace", "VARCHAR"),  # `trace_name`
    ("route", "VARCHAR"),
    ("conn", "BIGINT"),
    ("n", "BIGINT"),
    ("t", "DOUBLE"),
    ("id", "VARCHAR"),
    ("method", "VARCHAR"),
    ("status", "VARCHAR"),
    ("error", "BOOLEAN"),
    ("code", "VARCHAR"),
    ("latency", "DOUBLE"),
    ("request_size", "BIGINT"),
    ("response_size", "BIGINT"),
    ("violations", "BIGINT"),
    ("params", "JSON"),
    ("result", "JSON"),
    ("error_object", "JSON"),
    ("id_type", "VARCHAR"),
    ("layer", "VARCHAR"),
    ("tool", "VARCHAR"),
    ("tool_call", "BIGINT"),
    ("attribution", "VARCHAR"),
    ("tool_call_candidates", "BIGINT[]"),
    ("elided", "BIGINT"),
    ("late", "BOOLEAN"),
    ("answer_of", "BIGINT"),
    ("status_note", "VARCHAR"),
    ("faults", "VARCHAR[]"),
)
"""Name and DuckDB type of every column, in order. ``n`` is the flow's number in its trace
(`show`'s ``#``), ``latency`` is in seconds, ``code`` the error code as text (GOLEM mixes
numbers and names), ``status`` the outcome `show` prints, ``id_type`` whether the id was a
JSON ``string`` or ``number`` (``1`` and ``"1"`` are different ids, one text in ``id``). The
two layers of a `golem-proxy mcp` recording as `show --json` gives them: ``layer`` (``mcp``
or ``golem``), ``tool`` (an MCP ``tools/call``'s), ``tool_call`` (the ``n`` of the call a
GOLEM flow belongs to) and ``attribution`` (``call``, ``none``, ``ambiguous``, ``unknown``);
``tool_call_candidates``, of an ``ambiguous`` flow, the ``n`` of each call in flight when it
was sent, any of which may have caused it (null: a call not read, as `show` writes ``?``).
``elided``: the bytes left out of ``params`` and ``result`` (a payload too large for a reader
to parse, read from its skeleton: they hold placeholders), 0 when both are whole. An answer
out of turn, as the recording marks it (`golem_proxy.analysis.late_answers`): ``late``, a
GOLEM answer that came after its tool call returned (false for every other row);
``answer_of``, of a ``tools/call`` whose result is another GOLEM exchange's answer, that
exchange's ``n`` (null otherwise, or when that exchange is not in the trace); ``status_note``,
the words `show` prints after such a row's status (``late: after its tool call #7
returned``, ``its result is #8's answer (execute_python), not its own: …``), null for every
other row. ``faults``: what the proxy itself did to the flow's frames, each step once
(``--fault error``, ``--fault delay``, ``intercept:answer``: `step_names`), empty where it did
nothing: ``status`` says it in words after the outcome (``TIMEOUT (--fault error)``)."""

ADDED_COLUMNS = frozenset(
    {
        "id_type",
        "layer",
        "tool",
        "tool_call",
        "attribution",
        "tool_call_candidates",
        "elided",
        "late",
        "answer_of",
        "status_note",
        "faults",
    }
)
"""The columns added after the first release of the table: a Parquet file exported before
lacks them, and `query` reads them as null there."""


class FlowTableError(Exception):
    """DuckDB refused a query or a file; the message is one line."""


def column_spec(columns: tuple[tuple[str, str], ...] = COLUMNS) -> str:
    """The ``columns`` (the flows' by default) as a DuckDB ``read_json`` ``columns``
    struct."""
    return "{" + ", ".join(f"{name!r}: {kind!r}" for name, kind in columns) + "}"


TRACE_DIGITS = 16
"""Hex digits of the header's digest in a trace's name: 64 bits, so that among a million
sessions recorded under one path two share a name with a chance of about 3 in 10**8."""


def trace_name(trace: FlowReader) -> str:
    """What the ``trace`` column names ``trace`` by: its file's absolute path (links
    resolved), ``#``, and the first `TRACE_DIGITS` hex digits of its header line's SHA-256
    (`OpenedRecording.header_digest`). Recordings at different paths differ, and so do
    sessions recorded at one path (the CI runs that each write ``session.jsonl`` in the same
    place): the header holds when the session started, to the microsecond. The same file
    read again, whatever the path it is given by, has the same name."""
    return f"{os.path.realpath(trace.path)}#{trace.header_digest[:TRACE_DIGITS]}"


def flow_rows(trace: FlowReader) -> Iterator[dict[str, Any]]:
    """One row per flow of ``trace``, its ``trace`` column `trace_name`. Raises TraceError."""
    name = trace_name(trace)
    for flow, data in layered_json(trace):
        request = data.get("request")
        response = data.get("response")
        latency = flow.latency
        code = flow.error_code
        answered = data.get("answer_of")
        yield {
            "trace": name,
            "route": data["route"],
            "conn": data["conn"],
            "n": data["number"],
            "t": data["t"],
            "id": None if data["id"] is None else str(data["id"]),
            "method": data["method"],
            "status": data["status"],
            "error": data["error"],
            "code": None if code is None else str(code),
            "latency": latency,
            "request_size": data["request_size"],
            "response_size": data["response_size"],
            "violations": len(data["violations"]),
            # Objects as they are: the row file is JSON, and DuckDB keeps them as JSON text.
            "params": request.get("params") if isinstance(request, dict) else None,
            "result": response.get("result") if isinstance(response, dict) else None,
            "error_object": response.get("error") if isinstance(response, dict) else None,
            "id_type": _id_type(data["id"]),
            "layer": data["layer"],
            "tool": data.get("tool"),
            "tool_call": data.get("tool_call"),
            "attribution": data.get("attribution"),
            "tool_call_candidates": data.get("tool_call_candidates"),
            "elided": data.get("request_elided", 0) + data.get("response_elided", 0),
            # As `show --json` says them (`two_layer_json`): read from the recording's marks.
            "late": bool(data.get("late")),
            "answer_of": answered.get("flow") if answered is not None else None,
            "status_note": data.get("late_text") or (answered or {}).get("text"),
            # The proxy's own steps, as the flow tracker placed them (`Flow.faults`).
            "faults": step_names(flow.faults),
        }


def _id_type(ident: Any) -> Optional[str]:
    if ident is None:
        return None
    return "string" if isinstance(ident, str) else "number"


# A lone surrogate (text decoded from a JSON escape of one) is no Unicode text: DuckDB, like any
# UTF-8 reader, refuses it, escaped or not. It becomes its escape spelled out (``\ud800``),
# visible in the table rather than dropped.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _spelled_out(match: re.Match[str]) -> str:
    return f"\\\\u{ord(match.group()):04x}"


_ENCODE = json.JSONEncoder(ensure_ascii=False, allow_nan=False).encode  # one, not one per row
_WRITE_AT = 1 << 20  # characters of lines held before they are written


class RowsWritten(NamedTuple):
    """How many rows `write_rows` wrote, and the longest one's bytes."""

    rows: int
    longest: int


def write_rows(rows: Iterator[dict[str, Any]], stream: IO[bytes]) -> RowsWritten:
    """Write ``rows`` as JSON lines to ``stream``; returns how many, and how long the longest
    is in bytes. Lines are written about a mebibyte at a time (one encoding and one write for
    many rows; a row larger than that alone)."""
    count = held = longest = 0
    lines: list[str] = []
    for row in rows:
        try:
            line = _ENCODE(row)
        except ValueError:  # NaN or an infinity: named, as `show --json` names them
            line = _ENCODE(numbers_named(row))
        if line.isascii():  # the common case: characters are bytes, and no surrogate
            size = len(line)
        else:
            line = _LONE_SURROGATE.sub(_spelled_out, line)
            size = len(line.encode("utf-8"))
        lines.append(line)
        count += 1
        held += len(line)
        longest = max(longest, size)
        if held >= _WRITE_AT:
            _write_lines(lines, stream)
            lines, held = [], 0
    if lines:
        _write_lines(lines, stream)
    return RowsWritten(count, longest)


def _write_lines(lines: list[str], stream: IO[bytes]) -> None:
    lines.append("")  # the last line's newline
    stream.write("\n".join(lines).encode("utf-8"))


MAX_ROW = 4 * DEFAULT_MAX_LINE
"""The longest row the engine reads (DuckDB's default is 16 MiB): a row holds a flow's two
payloads as JSON text, each from a line of up to `DEFAULT_MAX_LINE` that escaping may double,
so every flow a recording holds fits."""


SMALLEST_BUFFER = 16 * 1024 * 1024
"""The engine's own default for the longest row it reads: what the export asks for at least."""
ROW_GROUP_BYTES = 64 * 1024 * 1024
"""The most a Parquet row group the export writes holds (DuckDB's ``ROW_GROUP_SIZE_BYTES``)."""


def rows_relation(
    paths: str | list[str],
    longest: int = MAX_ROW,
    columns: tuple[tuple[str, str], ...] = COLUMNS,
) -> str:
    """SQL reading files of rows written by `write_rows` with the types of ``columns`` (the
    flows' by default), the longest row ``longest`` bytes (`RowsWritten.longest`; unknown:
    the longest a recording may hold). The engine sizes its buffers by it: 384 MiB each for
    `MAX_ROW`, where a trace of 16 MiB captures needs 16 (on such a trace, a query's peak RSS
    725 MiB against 261)."""
    names = [paths] if isinstance(paths, str) else paths
    quoted = ", ".join("'" + path.replace("'", "''") + "'" for path in names)
    size = min(max(longest + 1, SMALLEST_BUFFER), MAX_ROW)
    return (
        f"SELECT * FROM read_json([{quoted}], format = 'newline_delimited', "
        f"maximum_object_size = {size}, columns = {column_spec(columns)})"
    )


@contextlib.contextmanager
def private_directory(where: str) -> Iterator[str]:
    """A private (0700) temporary directory in ``where``, removed with what it holds."""
    directory = tempfile.mkdtemp(prefix=".golem-proxy-", dir=where)
    try:
        yield directory
    finally:
        for entry in os.listdir(directory):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(directory, entry))
        with contextlib.suppress(OSError):
            os.rmdir(directory)


def write_parquet(trace: FlowReader, out: str, table: str = "flows") -> int:
    """Write the rows of ``trace``'s ``table`` to ``out`` as a Parquet file (mode 0600,
    renamed into place once whole): its flows (`COLUMNS`), or ``server_stderr``, the lines
    its server wrote to its stderr (`stderr_table`). Returns the row count. Raises
    TraceError, OSError and FlowTableError."""
    import duckdb  # imported here: only these commands need the engine

    from .stderr_table import STDERR_COLUMNS, StderrRows

    check_replaceable(out)
    with private_directory(os.path.dirname(out) or ".") as directory:
        rows_path = os.path.join(directory, "rows.jsonl")
        fd = os.open(rows_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as stream:
            if table == "server_stderr":
                columns = STDERR_COLUMNS
                lines = StderrRows(trace_name(trace), stream)
                for event in trace.events():
                    if isinstance(event, ProcessOutput):
                        lines.add(event)
                written = lines.finish()
            else:
                columns = COLUMNS
                written = write_rows(flow_rows(trace), stream)
        temp = os.path.join(directory, "flows.parquet")
        quoted = temp.replace("'", "''")
        # One thread, row groups of at most `ROW_GROUP_BYTES`: the engine holds a row group
        # per thread before writing it, and a default one (122,880 rows) of 16 MiB captures
        # was the whole trace (40 of them: 1.8 GiB at the peak, 0.4 GiB so).
        # Read with buffers for the longest row written, not the longest a recording may
        # hold (`MAX_ROW`: 384 MiB a buffer).
        copy = f"COPY ({rows_relation(rows_path, written.longest, columns)}) TO '{quoted}' "
        copy += f"(FORMAT parquet, ROW_GROUP_SIZE_BYTES '{ROW_GROUP_BYTES}B')"
        try:
            with duckdb.connect(":memory:", config={"threads": 1}) as db:
                db.execute(copy)
        except duckdb.Error as exc:
            # Named for the trace, not the rows file it was copied to, gone with the folder.
            text = one_line(exc).replace(rows_path, f"the rows of {trace.path}")
            raise FlowTableError(text) from None
        os.chmod(temp, 0o600)
        check_replaceable(out)
        os.replace(temp, out)
    return written.rows


def one_line(exc: BaseException) -> str:
    """An engine error as one line."""
    return " ".join(str(exc).split())
