"""``golem-proxy export FILE``: the exact byte streams of a recording, its exchanges as JSON
lines, its captured images, a pcapng capture (`interop.tcp_export`) or a Parquet table of its
flows (`interop.flow_table`)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import IO

from rich.text import Text

from ..analysis.captures import captures, write_captures
from ..analysis.trace import FlowReader, json_text, open_flows
from ..analysis.two_layer_json import layered_json
from ..interop.flow_table import FlowTableError, write_parquet
from ..interop.tcp_export import write_pcapng
from ..recording.format import replacing, write_private
from ..recording.streams import RebuiltStream, write_streams
from ..table_layout import Cell, Column, print_table
from ..terminal import counted, format_latency, safe_text
from ._common import (
    EXIT_FINDINGS,
    EXIT_OK,
    add_overwrite,
    check_output,
    console,
    fail,
    note_truncated,
    os_reason,
    print_notes,
)
from ._options import add_recording
from ._progress import file_progress

NAME = "export"
HELP = "export a recording: exact per-connection byte streams, or exchanges as JSON lines"
ORDER = 33


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_recording(parser)
    parser.add_argument(
        "--format",
        choices=("streams", "jsonl", "images", "pcapng", "parquet"),
        default="streams",
        help="streams: one .bin file per connection and direction plus index.json (default); "
        "jsonl: one flow per line with its request and response objects; "
        "images: every viewport.capture PNG as flow-N.png; "
        "pcapng: every connection as a TCP conversation, for Wireshark; "
        "parquet: one typed table of flows, for DuckDB, Spark, Trino (docs/interop.md)",
    )
    parser.add_argument(
        "--out",
        "-o",
        metavar="PATH",
        help="directory for streams and images (created if missing); file for jsonl "
        "(default: stdout), pcapng and parquet",
    )
    parser.add_argument(
        "--table",
        choices=("flows", "server_stderr"),
        default="flows",
        help="with --format parquet, the table: flows (default), or server_stderr, each line "
        "a wrapped MCP server wrote to its stderr (docs/interop.md)",
    )
    add_overwrite(parser, "jsonl, pcapng or parquet file")


def run(args: argparse.Namespace) -> int:
    if args.format in ("streams", "images") and not args.out:
        return fail(f"--format {args.format} needs --out DIR")
    if args.format in ("pcapng", "parquet") and not args.out:
        return fail(f"--format {args.format} needs --out FILE")
    if args.table != "flows" and args.format != "parquet":
        return fail("--table is for --format parquet")
    if args.format in ("jsonl", "pcapng", "parquet"):
        check_output(args.out, overwrite=args.overwrite, inputs=[args.file])
    trace = open_flows(args.file)  # TraceError: printed as one line by `golem_proxy.cli`
    with trace, file_progress(trace.fileno(), "exporting"):
        try:
            if args.format == "jsonl":
                code = _export_jsonl(trace, args.out, args.overwrite)
            elif args.format == "pcapng":
                code = _export_pcapng(trace, args.out, args.overwrite)
            elif args.format == "parquet":
                code = _export_parquet(trace, args.out, args.table)
            elif args.format == "images":
                code = _export_images(trace, args.out)
            else:
                code = _export_streams(trace, args.out)
        except BrokenPipeError:
            raise  # the reader of stdout went away: the command line ends quietly
        except OSError as exc:
            where = exc.filename or args.out or "the standard output"
            return fail(f"cannot write {where} ({os_reason(exc)})")
    note_truncated(trace)
    return code


def _write_flows(trace: FlowReader, stream: IO[bytes]) -> int:
    count = 0
    for _, data in layered_json(trace):  # as `show --json`: two-layer members included
        stream.write((json_text(data) + "\n").encode("utf-8"))
        count += 1
    return count


def _export_jsonl(trace: FlowReader, out: str, overwrite: bool) -> int:
    if not out or out == "-":
        _write_flows(trace, sys.stdout.buffer)
        sys.stdout.buffer.flush()
        return EXIT_OK
    # Written whole (a damaged line further on leaves no half file) and private: the flows
    # carry whatever crossed the socket.
    with replacing(out, overwrite=overwrite) as stream:
        count = _write_flows(trace, stream)
    console(stderr=True).print(Text(f"wrote {counted(count, 'flow')} to {safe_text(out)}"))
    return EXIT_OK


def _export_images(trace: FlowReader, out: str) -> int:
    written = 0
    for capture in write_captures(captures(trace.flows()), out):
        size = f"{capture.width}x{capture.height}"
        console().print(Text(f"{capture.filename}  {size}  {len(capture.png)} B"))
        written += 1
    console(stderr=True).print(Text(f"wrote {counted(written, 'image')} to {safe_text(out)}"))
    return EXIT_OK


_STREAM_COLUMNS = (
    Column("file", wrap=True, priority=2, floor=16),
    Column("route", short="rt", wrap=True, priority=0, floor=8),
    Column("bytes", right=True),
    Column("frames", right=True, short="fr"),
    Column("errors", right=True, short="err"),
    Column("discarded", right=True, short="disc"),
    Column("check", wrap=True, priority=1, floor=12),
)


def _export_streams(trace: FlowReader, out: str) -> int:
    os.makedirs(out, mode=0o700, exist_ok=True)
    # Straight to the files: no stream is held in memory, however large the trace.
    streams = write_streams(trace.events(), trace.profile, out, trace.route_profiles)
    index = {
        "recording": os.path.abspath(trace.path),
        "profile": trace.profile.name,
        "framing": trace.profile.framing.value,
        "truncated_tail": trace.truncated_tail,
        "streams": [stream.to_json() for stream in streams],
    }
    text = json.dumps(index, indent=2, ensure_ascii=False) + "\n"
    write_private(
        os.path.join(out, "index.json"), text.encode("utf-8", "backslashreplace"), overwrite=True
    )

    rows: list[list[Cell]] = []
    lost = 0
    for stream in streams:
        complete = stream.complete
        if not stream.exact:
            check = Text(f"redacted ({stream.redacted_frames} frames): not exact", style="yellow")
        elif complete is None:
            check = Text("no close recorded", style="dim")
        elif complete:
            check = _forwarded_text(stream)
        else:
            lost += 1
            check = Text(f"≠ {stream.recorded_bytes} bytes forwarded", style="bold red")
        rows.append(
            [
                stream.filename,
                safe_text(stream.route),
                str(stream.size),
                str(stream.frames),
                str(stream.frame_errors),
                str(stream.discarded_bytes),
                check,
            ]
        )
    title = Text(f"{safe_text(out)} · {len(streams)} streams", style="italic")
    print_table(console(), _STREAM_COLUMNS, rows, title)
    if lost:
        console(stderr=True).print(
            Text(
                f"{counted(lost, 'stream')} differ from the byte counts the proxy recorded",
                style="red",
            )
        )
        return EXIT_FINDINGS
    return EXIT_OK


def _forwarded_text(stream: RebuiltStream) -> Text:
    """The check of a stream that adds up to the proxy's count: ``= bytes forwarded`` when
    the file holds what went on to the peer; else what went on and the frames that did not,
    which the file holds as they were sent (``= 88 B forwarded + 2 frames withheld``):
    requests a fault or an intercept withheld, frames whose receiver was gone."""
    held = [
        f"{counted(frames, 'frame')} {why}"
        for frames, why in (
            (stream.withheld_frames, "withheld"),
            (stream.undelivered_frames, "undelivered"),
        )
        if frames
    ]
    if not held:
        return Text("= bytes forwarded", style="green")
    return Text(f"= {stream.recorded_bytes} B forwarded + {' + '.join(held)}", style="yellow")


def _export_pcapng(trace: FlowReader, out: str, overwrite: bool) -> int:
    """Write ``trace`` to ``out`` as pcapng (private, written whole: a damaged line further on
    leaves no half file) and say what was written on stderr. Returns the exit code; raises
    TraceError and OSError."""
    with replacing(out, overwrite=overwrite) as stream:
        summary = write_pcapng(trace.events(), trace.header, trace.profile, stream)
    line = (
        f"wrote {summary.packets} packets of {summary.connections} connections "
        f"({summary.payload_bytes} payload bytes) to {safe_text(out)}"
    )
    if summary.gaps:
        least = "at least " if summary.gap_bytes_at_least else ""
        crossed = f"{least}{counted(summary.gap_bytes, 'byte')} crossed unobserved"
        line += f"; {counted(summary.gaps, 'gap')} ({crossed})"
    console(stderr=True).print(Text(line))
    notes = []
    if summary.start_problem is not None:
        # Said on stderr and in the capture's comment: a reader sees 1970 and knows why.
        notes.append(
            f"note: {safe_text(trace.path)}: its header has {summary.start_problem}: "
            "packet times count from 1970-01-01 00:00:00 UTC (only the times between "
            "packets are right)"
        )
    if summary.restamped:
        moved = format_latency(summary.most_moved / 1e6)
        notes.append(
            f"note: {safe_text(trace.path)}: {counted(summary.restamped, 'packet')} stamped "
            f"up to {moved} from their recorded time, so that times never go back in the "
            "recording's order (each one's comment holds its recorded time)"
        )
    print_notes(notes)
    return EXIT_OK


def _export_parquet(trace: FlowReader, out: str, table: str) -> int:
    """Write the ``table`` of ``trace`` (its flows, or the lines its server wrote to its
    stderr) to ``out`` as Parquet (its ``trace`` column names the recording:
    `flow_table.trace_name`), and say so on stderr. Returns the exit code; raises TraceError
    and OSError."""
    try:
        count = write_parquet(trace, out, table)
    except FlowTableError as exc:
        return fail(f"cannot write {out} ({exc})")
    what = "lines of the server's stderr" if table == "server_stderr" else "flows"
    console(stderr=True).print(Text(f"wrote {count} {what} to {safe_text(out)}"))
    return EXIT_OK
