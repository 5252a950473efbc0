"""What `query` is given, checked before it reads anything: a file named twice (overlapping
globs, ``runs/*.jsonl runs/a*.jsonl``) is read once, and a Parquet file that no export wrote
is refused, where DuckDB would have merged its columns with the flows' (its rows with a null
``trace``, or a query failing on a column of another type). An export of the
``server_stderr`` table (`stderr_table`) goes to that view."""

from __future__ import annotations

import os
from collections.abc import Sequence

from ..analysis.trace import TraceError
from ..terminal import safe_text
from .flow_table import ADDED_COLUMNS, COLUMNS, one_line
from .stderr_table import STDERR_COLUMNS

__all__ = ["check_exports", "distinct_files", "export_problem", "export_table"]


def distinct_files(paths: Sequence[str]) -> tuple[list[str], list[str]]:
    """``paths`` without those that name a file named before (the same device and inode,
    whatever the spelling), and one note for each left out. A path that cannot be looked at
    stays: reading it says why."""
    first: dict[tuple[int, int], str] = {}
    kept: list[str] = []
    notes: list[str] = []
    for path in paths:
        try:
            info = os.stat(path)
        except (OSError, ValueError):
            kept.append(path)
            continue
        key = (info.st_dev, info.st_ino)
        before = first.get(key)
        if before is None:
            first[key] = path
            kept.append(path)
        elif before == path:
            notes.append(f"note: {safe_text(path)}: given more than once, read once")
        else:
            notes.append(
                f"note: {safe_text(path)}: the same file as {safe_text(before)}, read once"
            )
    return kept, notes


def export_problem(columns: Sequence[tuple[str, str]]) -> str | None:
    """Why a Parquet file with ``columns`` (name and DuckDB type, in order) is not one that
    `export --format parquet` wrote, or None when it is: every column one of the table's
    with its type, and every column an export has always had there (a file exported before
    one of `ADDED_COLUMNS` existed lacks it, and reads it as null)."""
    known = dict(COLUMNS)
    for name, kind in columns:
        expected = known.get(name)
        if expected is None:
            return f"a column {name!r} that no export has"
        if kind != expected:
            return f"its column {name} is {kind}, not {expected}"
    present = {name for name, _ in columns}
    for name, _ in COLUMNS:
        if name not in present and name not in ADDED_COLUMNS:
            return f"no {name} column"
    return None


def export_table(columns: Sequence[tuple[str, str]]) -> tuple[str, str | None]:
    """Which table a Parquet file with ``columns`` holds: ``server_stderr`` when it has that
    table's columns by name, else ``flows``; and why it is not one `export --format parquet`
    wrote (None when it is)."""
    if {name for name, _ in columns} == {name for name, _ in STDERR_COLUMNS}:
        known = dict(STDERR_COLUMNS)
        for name, kind in columns:
            if kind != known[name]:
                return "server_stderr", f"its column {name} is {kind}, not {known[name]}"
        return "server_stderr", None
    return "flows", export_problem(columns)


def check_exports(paths: Sequence[str]) -> dict[str, str]:
    """Which table each of the Parquet files ``paths`` holds (`export_table`), by path;
    refuses the first that `export --format parquet` did not write, or that is no Parquet
    file. Reads their schemas only. Raises TraceError naming the file."""
    tables: dict[str, str] = {}
    if not paths:
        return tables
    import duckdb  # imported here: only these commands need the engine

    with duckdb.connect(":memory:") as db:
        for path in paths:
            if not os.path.isfile(path):
                raise TraceError(f"{path}: no such file")
            quoted = "'" + path.replace("'", "''") + "'"
            try:
                found = db.execute(f"DESCRIBE SELECT * FROM read_parquet({quoted})").fetchall()
            except duckdb.Error as exc:
                raise TraceError(f"{path}: not a Parquet file ({one_line(exc)})") from None
            table, problem = export_table([(str(row[0]), str(row[1])) for row in found])
            if problem is not None:
                raise TraceError(
                    f"{path}: not a Parquet file written by export --format parquet ({problem})"
                )
            tables[path] = table
    return tables
