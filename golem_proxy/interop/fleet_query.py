"""SQL over many traces at once: recordings (read through the analysis API, as `show` reads
them) and Parquet files written by `export --format parquet`, all in one ``flows`` view."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any, Callable, Optional

from ..analysis.trace import TraceError, open_flows
from .flow_table import (
    FlowTableError,
    flow_rows,
    one_line,
    private_directory,
    rows_relation,
    write_rows,
)

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


def _rows_of(
    paths: Sequence[str],
    rows_path: str,
    progress: Optional[Callable[[int, str], None]] = None,
    done: int = 0,
) -> str:
    """Write the rows of the recordings at ``paths``, in order, to a new private file
    ``rows_path``; ``progress`` is told each recording before it is read, counting from
    ``done``. Returns ``rows_path``. Raises TraceError and OSError."""
    fd = os.open(rows_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as stream:
        for index, path in enumerate(paths):
            if progress is not None:
                progress(done + index, path)
            with open_flows(path) as trace:
                write_rows(flow_rows(trace, path), stream)
    return rows_path


def worker_count(jobs: int, recordings: int) -> int:
    """How many processes read ``recordings`` recordings: ``jobs``, or one per core when it
    is 0, never more than there are recordings (nor than a process pool may have)."""
    wanted = jobs if jobs > 0 else os.cpu_count() or 1
    return max(1, min(wanted, recordings, _MAX_WORKERS))


def chunked(recordings: Sequence[str], workers: int) -> list[Sequence[str]]:
    """``recordings`` in consecutive pieces, about ``_CHUNKS_PER_WORKER`` per worker and
    at most ``_MAX_CHUNK`` long: a piece is one task and one file of rows."""
    per_chunk = -(-len(recordings) // (workers * _CHUNKS_PER_WORKER))
    size = max(1, min(per_chunk, _MAX_CHUNK))
    return [recordings[start : start + size] for start in range(0, len(recordings), size)]


def _read_recordings(
    recordings: Sequence[str],
    directory: str,
    progress: Optional[Callable[[int, str], None]],
    jobs: int = 0,
) -> list[str]:
    """The rows of every recording, in private files in ``directory``: read in this process
    with one worker, else by a pool of processes (``worker_count``), each taking a piece of
    recordings at a time (`chunked`) and streaming its rows to its own file, so memory is a
    flow at a time per process whatever the number of files. Returns the files' paths.
    Raises what reading a recording raises (the first failure stops the rest)."""
    workers = worker_count(jobs, len(recordings))
    if workers <= 1:
        return [_rows_of(recordings, os.path.join(directory, "rows-0.jsonl"), progress)]
    chunks = chunked(recordings, workers)
    paths = [os.path.join(directory, f"rows-{index}.jsonl") for index in range(len(chunks))]
    with ProcessPoolExecutor(workers) as pool:
        futures = {pool.submit(_rows_of, chunk, rows): chunk for chunk, rows in zip(chunks, paths)}
        read = 0
        try:
            for future in as_completed(futures):
                future.result()
                read += len(futures[future])
                if progress is not None:
                    progress(read, futures[future][-1])
        except BaseException:
            pool.shutdown(wait=True, cancel_futures=True)
            raise
    return paths


def run_query(
    sql: str,
    traces: Sequence[str],
    consume: Callable[[QueryResult], None],
    *,
    progress: Optional[Callable[[int, str], None]] = None,
    jobs: int = 0,
) -> int:
    """Run ``sql`` over the ``flows`` of ``traces`` (recordings, and ``.parquet`` files) and
    hand the result to ``consume`` while the database is open. Returns the number of traces
    read. Recordings are read by ``jobs`` processes (0: one per core). ``progress`` is told
    how many recordings are read and the last one's path as reading goes on. Raises
    TraceError for a recording that cannot be read, FlowTableError when DuckDB refuses the
    query or a file, and OSError."""
    import duckdb  # imported here: only these commands need the engine

    parquet = [path for path in traces if path.endswith(".parquet")]
    recordings = [path for path in traces if not path.endswith(".parquet")]
    for path in parquet:
        if not os.path.isfile(path):
            raise TraceError(f"{path}: no such file")
    with private_directory(tempfile.gettempdir()) as directory:
        parts: list[str] = []
        if recordings:
            row_files = _read_recordings(recordings, directory, progress, jobs)
            parts.append(rows_relation(row_files))
        if parquet:
            files = ", ".join(_quote(path) for path in parquet)
            parts.append(f"SELECT * FROM read_parquet([{files}], union_by_name = true)")
        try:
            with duckdb.connect(":memory:") as db:
                # What DuckDB spills to disk stays in the private directory too.
                db.execute(f"SET temp_directory = {_quote(directory)}")
                db.execute(f"CREATE VIEW flows AS {' UNION ALL BY NAME '.join(parts)}")
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
    return len(traces)
