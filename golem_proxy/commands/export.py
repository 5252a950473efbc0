"""``golem-proxy export FILE``: the exact byte streams of a recording, or its exchanges as
JSON lines."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import IO

from rich.table import Table
from rich.text import Text

from ..analysis.captures import captures, write_captures
from ..analysis.trace import Trace, flow_to_json
from ..recording.streams import rebuild_streams
from ..terminal import safe_text
from ._common import (
    EXIT_FINDINGS,
    EXIT_OK,
    EXIT_USAGE,
    console,
    fail,
    open_trace,
    os_reason,
    trace_path_arg,
)

NAME = "export"
HELP = "export a recording: exact per-connection byte streams, or exchanges as JSON lines"
ORDER = 33


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "file", metavar="FILE", type=trace_path_arg, help="a recording (.jsonl, or sample:NAME)"
    )
    parser.add_argument(
        "--format",
        choices=("streams", "jsonl", "images"),
        default="streams",
        help="streams: one .bin file per connection and direction plus index.json (default); "
        "jsonl: one flow per line with its request and response objects; "
        "images: every viewport.capture PNG as flow-N.png",
    )
    parser.add_argument(
        "--out",
        "-o",
        metavar="PATH",
        help="directory for streams and images (created if missing); file for jsonl "
        "(default: stdout)",
    )


def run(args: argparse.Namespace) -> int:
    if args.format in ("streams", "images") and not args.out:
        return fail(f"--format {args.format} needs --out DIR")
    trace = open_trace(args.file)
    if trace is None:
        return EXIT_USAGE
    try:
        if args.format == "jsonl":
            return _export_jsonl(trace, args.out)
        if args.format == "images":
            return _export_images(trace, args.out)
        return _export_streams(trace, args.out)
    except OSError as exc:
        return fail(f"cannot write {exc.filename or args.out} ({os_reason(exc)})")


def _export_jsonl(trace: Trace, out: str) -> int:
    def write(stream: IO[str]) -> None:
        for flow in trace.flows:
            stream.write(json.dumps(flow_to_json(flow, trace.profile), ensure_ascii=False) + "\n")

    if not out or out == "-":
        write(sys.stdout)
    else:
        with open(out, "w", encoding="utf-8") as handle:
            write(handle)
        console(stderr=True).print(f"wrote {len(trace.flows)} flows to {out}")
    return EXIT_OK


def _export_images(trace: Trace, out: str) -> int:
    found = captures(trace.flows)
    write_captures(found, out)
    for capture in found:
        size = f"{capture.width}x{capture.height}"
        console().print(Text(f"{capture.filename}  {size}  {len(capture.png)} B"))
    console(stderr=True).print(Text(f"wrote {len(found)} images to {safe_text(out)}"))
    return EXIT_OK


def _export_streams(trace: Trace, out: str) -> int:
    streams = rebuild_streams(trace.events, trace.profile)
    os.makedirs(out, exist_ok=True)
    for stream in streams.values():
        with open(os.path.join(out, stream.filename), "wb") as handle:
            handle.write(stream.data)
    index = {
        "recording": os.path.abspath(trace.path),
        "profile": trace.profile.name,
        "framing": trace.profile.framing.value,
        "truncated_tail": trace.recording.truncated_tail,
        "streams": [stream.to_json() for stream in streams.values()],
    }
    with open(os.path.join(out, "index.json"), "w", encoding="utf-8") as handle:
        json.dump(index, handle, indent=2, ensure_ascii=False)
        handle.write("\n")

    table = Table(title=f"{out} · {len(streams)} streams", title_justify="left")
    for column in ("file", "route", "bytes", "frames", "errors", "discarded", "check"):
        table.add_column(
            column, justify="left" if column in ("file", "route", "check") else "right"
        )
    lost = 0
    for stream in streams.values():
        complete = stream.complete
        if not stream.exact:
            check = Text(f"redacted ({stream.redacted_frames} frames): not exact", style="yellow")
        elif complete is None:
            check = Text("no close recorded", style="dim")
        elif complete:
            check = Text("= bytes forwarded", style="green")
        else:
            lost += 1
            check = Text(f"≠ {stream.recorded_bytes} bytes forwarded", style="bold red")
        table.add_row(
            stream.filename,
            stream.route,
            str(len(stream.data)),
            str(stream.frames),
            str(stream.frame_errors),
            str(stream.discarded_bytes),
            check,
        )
    console().print(table)
    if lost:
        console(stderr=True).print(
            Text(f"{lost} stream(s) differ from the byte counts the proxy recorded", style="red")
        )
        return EXIT_FINDINGS
    return EXIT_OK
