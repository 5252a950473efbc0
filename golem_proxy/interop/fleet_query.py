"""SQL over many traces at once: recordings (read through the analysis API, as `show` reads
them) and Parquet files written by `export --format parquet`, all in one ``flows`` view, and
what their MCP servers wrote to stderr in one ``server_stderr`` view (`stderr_table`)."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from functools import partial
from typing import Any, Callable, Optional

from ..analysis.reading_notes import reading_notes
from ..analysis.trace import open_flows
from ..recording.files import open_private
from .fleet_inputs import check_exports, distinct_files
from .flow_table import (
    COLUMNS,
    FlowTableError,
    flow_rows,
    one_line,
    private_directory,
    rows_relation,
    trace_name,
    write_rows,
)
from .row_cache import RowFile, cached_row_file, cached_rows, prepare_cache, rows_into_cache
from .stderr_table import STDERR_COLUMNS, StderrRows

__all__ = ["QueryResult", "chunked", "run_query", "worker_count"]

_BATCH = 1000
_MAX_WORKERS = 61  # the most a process pool may have on Windows
_CHUNKS_PER_WORKER = 8  # enough pieces that no worker idles long at the end
_MAX_CHUNK = 32  # recordings per piece at most: progress moves, a failure stops soon


@dataclass
class QueryResult:
    """A query's column names and its rows, fetched in batches as they are iterated."""

    columns: list[str]
    rows: Iterator[tuple[Any, ...]]


def _quote(path: str) -> str:
    return "'" + path.replace("'", "''") + "'"


def _rows_to_private(directory: str, piece: Sequence[str], index: int) -> list[RowFile]:
    """The rows of the recordings of ``piece``, in order, in one new private file in
    ``directory`` named by ``index``, and their ``server_stderr`` rows in another. Raises
    TraceError and OSError."""
    path = os.path.join(directory, f"rows-{index}.jsonl")
    stderr_path = os.path.join(directory, f"stderr-{index}.jsonl")
    notes: list[str] = []
    longest = stderr_longest = lines = 0
    with open_private(path) as stream, open_private(stderr_path) as errors:
        for recording in piece:
            with open_flows(recording) as trace:
                stderr = StderrRows(trace_name(trace), errors)
                trace.tracker.on_output = stderr.add
                written = write_rows(flow_rows(trace), stream)
                longest = max(longest, written.longest)
                said = stderr.finish()
                lines += said.rows
                stderr_longest = max(stderr_longest, said.longest)
                notes += reading_notes(trace)
    return [
        RowFile(
            path,
            scratch=True,
            recordings=tuple(piece),
            notes=tuple(notes),
            longest=longest,
            stderr=stderr_path if lines else None,
            stderr_longest=stderr_longest,
        )
    ]


def _rows_to_cache(directory: str, piece: Sequence[str], index: int) -> list[RowFile]:
    """The rows of each recording of ``piece`` in its file in the cache ``directory``."""
    return rows_into_cache(piece, directory)


_Work = Callable[[Sequence[str], int], list[RowFile]]
"""Writes the rows of a piece of recordings (the piece's number given) to files."""


def worker_count(jobs: int, recordings: int) -> int:
    """How many processes read ``recordings`` recordings: ``jobs``, or one per core when it
    is 0, never more than there are recordings (nor than a process pool may have)."""
    wanted = jobs if jobs > 0 else os.cpu_count() or 1
    return max(1, min(wanted, recordings, _MAX_WORKERS))


def chunked(recordings: Sequence[str], workers: int) -> list[Sequence[str]]:
    """``recordings`` in consecutive pieces, about ``_CHUNKS_PER_WORKER`` per worker and
    at most ``_MAX_CHUNK`` long: a piece is one task for a worker."""
    per_chunk = -(-len(recordings) // (workers * _CHUNKS_PER_WORKER))
    size = max(1, min(per_chunk, _MAX_CHUNK))
    return [recordings[start : start + size] for start in range(0, len(recordings), size)]


def _read_recordings(
    recordings: Sequence[str],
    work: _Work,
    jobs: int,
    progress: Optional[Callable[[int, str], None]],
) -> list[RowFile]:
    """The files of rows of every recording, written by ``work``: in this process one
    recording at a time with one worker, else by a pool of processes (`worker_count`), each
    taking a piece of recordings at a time (`chunked`) and streaming its rows to files, so
    memory is a flow at a time per process whatever the number of recordings. ``progress``
    is told how many are read and the last one's path. Raises what reading a recording
    raises (the first failure stops the rest)."""
    files: list[RowFile] = []
    workers = worker_count(jobs, len(recordings))
    if workers <= 1:
        for index, path in enumerate(recordings):
            if progress is not None:
                progress(index, path)
            files += work([path], index)
        return files
    pieces = chunked(recordings, workers)
    with ProcessPoolExecutor(workers) as pool:
        futures = {pool.submit(work, piece, index): piece for index, piece in enumerate(pieces)}
        read = 0
        try:
            for future in as_completed(futures):
                files += future.result()
                read += len(futures[future])
                if progress is not None:
                    progress(read, futures[future][-1])
        except BaseException:
            pool.shutdown(wait=True, cancel_futures=True)
            raise
    return files


def _row_files(
    recordings: Sequence[str],
    directory: str,
    cache: Optional[str],
    jobs: int,
    progress: Optional[Callable[[int, str], None]],
) -> list[RowFile]:
    """The files of rows of ``recordings``: written to the private ``directory``, or, with
    a ``cache`` folder, found there for the recordings it holds current and written there
    for the others."""
    if cache is None:
        return _read_recordings(recordings, partial(_rows_to_private, directory), jobs, progress)
    prepare_cache(cache)
    hits = [cached_rows(cache, path) for path in recordings]
    found = [cached_row_file(hit, path) for path, hit in zip(recordings, hits) if hit is not None]
    missing = [path for path, hit in zip(recordings, hits) if hit is None]
    told = None if progress is None else partial(_counted_from, progress, len(found))
    return found + _read_recordings(missing, partial(_rows_to_cache, cache), jobs, told)


def _counted_from(progress: Callable[[int, str], None], already: int, done: int, path: str) -> None:
    progress(already + done, path)


def run_query(
    sql: str,
    traces: Sequence[str],
    consume: Callable[[QueryResult], None],
    *,
    progress: Optional[Callable[[int, str], None]] = None,
    notes: Optional[Callable[[list[str]], None]] = None,
    jobs: int = 0,
    cache: Optional[str] = None,
) -> int:
    """Run ``sql`` over the ``flows`` and ``server_stderr`` of ``traces`` (recordings, and
    ``.parquet`` files) and
    hand the result to ``consume`` while the database is open. Returns the number of files
    read. Recordings are read by ``jobs`` processes (0: one per core); with a ``cache``
    folder their rows are kept there and read from there while they stay the same
    (`row_cache`). ``progress`` is told how many recordings are read and the last one's path
    as reading goes on; ``notes`` is given what reading them noted (`reading_notes`: a
    recording cut short), before the query runs; a file given more than once is read once,
    and noted first (`distinct_files`). Raises TraceError for a recording that cannot be
    read or a Parquet file no export wrote (`check_exports`), FlowTableError when DuckDB
    refuses the query or a file (naming the recordings, not the files of their rows), and
    OSError. A query that does not parse, or holds no statement, is refused before any
    trace is read."""
    _check_sql(sql)
    distinct, repeated = distinct_files(traces)
    parquet = [path for path in distinct if path.endswith(".parquet")]
    recordings = [path for path in distinct if not path.endswith(".parquet")]
    tables = check_exports(parquet)  # before the recordings are read: refused at once
    if repeated and notes is not None:
        notes(repeated)
    with private_directory(tempfile.gettempdir()) as directory:
        # Every column, none of the rows, first: a Parquet file exported before a column was
        # added reads it as null, alone as beside others.
        parts = [_no_rows(COLUMNS)]
        stderr_parts = [_no_rows(STDERR_COLUMNS)]
        row_files: list[RowFile] = []
        try:
            if recordings:
                row_files = _row_files(recordings, directory, cache, jobs, progress)
                longest = max(row.longest for row in row_files)
                parts.append(rows_relation([row.path for row in row_files], longest))
                said = [row for row in row_files if row.stderr is not None]
                if said:
                    paths = [row.stderr for row in said if row.stderr is not None]
                    longest = max(row.stderr_longest for row in said)
                    stderr_parts.append(rows_relation(paths, longest, STDERR_COLUMNS))
                if notes is not None:
                    notes([note for row in row_files for note in row.notes])
            for table, into in (("flows", parts), ("server_stderr", stderr_parts)):
                files = ", ".join(_quote(path) for path in parquet if tables[path] == table)
                if files:
                    into.append(f"SELECT * FROM read_parquet([{files}], union_by_name = true)")
            views = {
                "flows": " UNION ALL BY NAME ".join(parts),
                "server_stderr": " UNION ALL BY NAME ".join(stderr_parts),
            }
            try:
                _run_sql(sql, views, directory, consume)
            except FlowTableError as exc:
                raise FlowTableError(_named(str(exc), row_files)) from None
        finally:
            for row in row_files:
                if row.scratch:  # a cache's scratch files; the private ones go with the folder
                    for path in (row.path, row.stderr):
                        if path is not None:
                            with contextlib.suppress(OSError):
                                os.unlink(path)
    return len(distinct)


def _no_rows(columns: tuple[tuple[str, str], ...]) -> str:
    return (
        "SELECT "
        + ", ".join(f"CAST(NULL AS {kind}) AS {name}" for name, kind in columns)
        + " WHERE false"
    )


def _named(message: str, row_files: list[RowFile]) -> str:
    """An engine's ``message`` with the files of rows it names replaced by the recordings
    they hold: the user gave those, and the files are gone once the query ends."""
    for row in row_files:
        for path in (row.path, row.stderr):
            if path is not None and path in message:
                message = message.replace(path, "the rows of " + ", ".join(row.recordings))
    return message


def _check_sql(sql: str) -> None:
    """Raises FlowTableError when ``sql`` does not parse or holds no statement (empty, blank,
    only comments or semicolons): DuckDB runs such a text as nothing at all, with no result."""
    import duckdb  # imported here: only these commands need the engine

    try:
        with duckdb.connect(":memory:") as db:
            statements = db.extract_statements(sql)
    except duckdb.Error as exc:
        raise FlowTableError(one_line(exc)) from None
    if not statements:
        raise FlowTableError("no SQL statement to run: the query is empty or only comments")


def _run_sql(
    sql: str, views: dict[str, str], directory: str, consume: Callable[[QueryResult], None]
) -> None:
    """Run ``sql`` with each of ``views`` (SQL by name) as a view of that name, spilling to
    ``directory``, and hand the result to ``consume``. Raises FlowTableError."""
    import duckdb  # imported here: only these commands need the engine

    try:
        with duckdb.connect(":memory:") as db:
            # What DuckDB spills to disk stays in the private directory too.
            db.execute(f"SET temp_directory = {_quote(directory)}")
            for name, relation in views.items():
                db.execute(f"CREATE VIEW {name} AS {relation}")
            cursor = db.execute(sql)
            description = cursor.description or []
            columns = [str(column[0]) for column in description]

            def rows() -> Iterator[tuple[Any, ...]]:
                if not description:
                    return
                while True:
                    batch = cursor.fetchmany(_BATCH)
                    if not batch:
                        return
                    yield from batch

            consume(QueryResult(columns, rows()))
    except duckdb.Error as exc:
        raise FlowTableError(one_line(exc)) from None
