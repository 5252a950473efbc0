"""``golem-proxy query 'SQL' TRACES…``: SQL (DuckDB) over the flows of many traces at once."""

from __future__ import annotations

import argparse
import csv
import datetime
import decimal
import sys
import uuid
from typing import Any, Callable

from rich.progress import Progress
from rich.table import Table
from rich.text import Text

from ..analysis.trace import TraceError, json_text
from ..interop.fleet_query import QueryResult, run_query
from ..interop.flow_table import COLUMNS, FlowTableError
from ..interop.row_cache import prepare_cache
from ..terminal import safe_text
from ._common import (
    EXIT_OK,
    console,
    count_arg,
    fail,
    os_reason,
    print_notes,
    trace_path_arg,
)

NAME = "query"
HELP = "run SQL over the flows (and servers' stderr) of many traces, with DuckDB"
ORDER = 35


def add_arguments(parser: argparse.ArgumentParser) -> None:
    columns = ", ".join(name for name, _ in COLUMNS)
    parser.description = (
        f"Run SQL over a view named flows, one row per flow of every trace given ({columns}), "
        "and server_stderr, one row per line an MCP server wrote to its stderr (trace, route, "
        "conn, t, text)."
    )
    parser.add_argument("sql", metavar="SQL", help="the query, e.g. 'SELECT method, count(*) "
                        "FROM flows GROUP BY method'")  # fmt: skip
    parser.add_argument(
        "traces",
        metavar="TRACE",
        nargs="+",
        type=trace_path_arg,
        help="recordings (.jsonl, sample:NAME) and Parquet files from export --format parquet",
    )
    parser.add_argument(
        "--jobs",
        metavar="N",
        type=count_arg,
        default=0,
        help="processes reading the recordings (default 0: one per core)",
    )
    parser.add_argument(
        "--cache",
        metavar="DIR",
        help="keep each recording's rows in DIR (made if missing) and read them from there "
        "next time, until the recording changes",
    )
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="one JSON object per row")
    output.add_argument("--csv", action="store_true", help="CSV with a header line")


def _plain(value: Any) -> Any:
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, (datetime.date, datetime.time, datetime.timedelta, uuid.UUID)):
        return str(value)
    if isinstance(value, (bytes, bytearray)):
        return value.hex()
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)  # any other engine type: its text


def _print_json(result: QueryResult) -> None:
    write = sys.stdout.write
    for row in result.rows:
        data = {name: _plain(value) for name, value in zip(result.columns, row)}
        write(json_text(data) + "\n")


def _print_csv(result: QueryResult) -> None:
    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerow(result.columns)
    for row in result.rows:
        writer.writerow(["" if value is None else _plain(value) for value in row])


def _print_table(result: QueryResult) -> None:
    table = Table(title_justify="left")
    for name in result.columns:
        table.add_column(Text(safe_text(name)), overflow="fold")
    count = 0
    for row in result.rows:
        # Cells as Text: a value is data, never rich markup.
        table.add_row(*(Text("null", style="dim") if v is None else Text(safe_text(str(_plain(v))))
                        for v in row))  # fmt: skip
        count += 1
    table.title = f"{count} row" + ("" if count == 1 else "s")
    console().print(table)


def run(args: argparse.Namespace) -> int:
    printer = _print_json if args.json else _print_csv if args.csv else _print_table
    recordings = sum(1 for path in args.traces if not path.endswith(".parquet"))
    # Reading a thousand recordings takes a while: say how far it got, on a terminal only.
    with Progress(
        console=console(stderr=True), transient=True, disable=not sys.stderr.isatty()
    ) as bar:
        task = bar.add_task("reading recordings", total=recordings)

        def progress(index: int, path: str) -> None:
            bar.update(task, completed=index, description=f"reading {safe_text(path, 60)}")

        def consume(result: QueryResult) -> None:
            bar.stop()  # the bar is gone before the first row prints
            try:
                printer(result)
            except OSError as exc:
                raise _OutputFailed(exc) from exc

        try:
            return _run(args, consume, progress)
        except _OutputFailed as failed:
            # Not a trace that cannot be read: the output's own error, ended as every command
            # ends it (`golem_proxy.cli`: quietly with exit 0 when its reader went away).
            raise failed.error from None


class _OutputFailed(Exception):
    """Printing the result failed with ``error`` (a closed pipe, a full disk): kept apart
    from the OSErrors of reading the traces, which `_run` reports as such."""

    def __init__(self, error: OSError) -> None:
        super().__init__(str(error))
        self.error = error


def _run(
    args: argparse.Namespace,
    printer: Callable[[QueryResult], None],
    progress: Callable[[int, str], None],
) -> int:
    if args.cache is not None:
        try:
            prepare_cache(args.cache)
        except OSError as exc:
            return fail(f"cannot use {args.cache} as the cache folder ({os_reason(exc)})")
    try:
        run_query(
            args.sql,
            args.traces,
            printer,
            progress=progress,
            notes=print_notes,
            jobs=int(args.jobs),
            cache=args.cache,
        )
    except TraceError as exc:
        return fail(str(exc))
    except FlowTableError as exc:
        return fail(f"query failed ({exc})")
    except OSError as exc:
        return fail(f"cannot read {exc.filename or 'a trace'} ({os_reason(exc)})")
    sys.stdout.flush()
    return EXIT_OK
