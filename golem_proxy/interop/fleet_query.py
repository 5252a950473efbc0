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

__all__ = ["QueryResult", "run_query"]

_BATCH = 1000
_MAX_WORKERS = 8


@dataclass
class QueryResult:
    """A query's column names and its rows, fetched in batches as they are iterated."""

    columns: list[str]
    rows: Iterator[tuple[Any, ...]]


def _quote(path: str) -> str:
    return "'" + path.replace("'", "''") + "'"


def _rows_of(path: str, rows_path: str) -> str:
    """Write the rows of the recording at ``path`` to a new private file ``rows_path``."""
    fd = os.open(rows_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as stream, open_flows(path) as trace:
        write_rows(flow_rows(trace, path), stream)
    return rows_path


def _read_recordings(
    recordings: Sequence[str], directory: str, progress: Optional[Callable[[int, str], None]]
) -> list[str]:
    """The rows of every recording, one private file each in ``directory``, read by as many
    processes as there are cores (a trace is read whole by one, so memory is one trace's
    flows per process). Raises what reading a recording raises."""
    paths = [os.path.join(directory, f"rows-{index}.jsonl") for index in range(len(recordings))]
    workers = min(len(recordings), os.cpu_count() or 1, _MAX_WORKERS)
    if workers <= 1:
        for index, path in enumerate(recordings):
            if progress is not None:
                progress(index, path)
            _rows_of(path, paths[index])
        return paths
    with ProcessPoolExecutor(workers) as pool:
        futures = {pool.submit(_rows_of, path, rows): path for path, rows in zip(recordings, paths)}
        try:
            for done, future in enumerate(as_completed(futures)):
                future.result()
                if progress is not None:
                    progress(done + 1, futures[future])
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
) -> int:
    """Run ``sql`` over the ``flows`` of ``traces`` (recordings, and ``.parquet`` files) and
    hand the result to ``consume`` while the database is open. Returns the number of traces
    read. ``progress`` is told each recording as it is read. Raises TraceError for a
    recording that cannot be read, FlowTableError when DuckDB refuses the query or a file,
    and OSError."""
    import duckdb  # imported here: only these commands need the engine

    parquet = [path for path in traces if path.endswith(".parquet")]
    recordings = [path for path in traces if not path.endswith(".parquet")]
    for path in parquet:
        if not os.path.isfile(path):
            raise TraceError(f"{path}: no such file")
    with private_directory(tempfile.gettempdir()) as directory:
        parts: list[str] = []
        if recordings:
            row_files = _read_recordings(recordings, directory, progress)
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
