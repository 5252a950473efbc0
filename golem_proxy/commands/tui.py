"""``golem-proxy tui FILE [--follow] [--filter EXPR]``: browse a recording, or tail one being
written."""

from __future__ import annotations

import argparse
import os
import time

from ..analysis.filters import FilterError, parse_filter
from ..recording.format import RecordingError
from ..terminal import safe_text
from ._common import fail

NAME = "tui"
HELP = "Open a recording in the terminal UI (with --follow, tail one being written)."
ORDER = 60

HEADER_WAIT = 10.0
"""Seconds ``--follow`` waits for a new file's header line to be written."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help="a recording (.jsonl)")
    parser.add_argument(
        "--follow",
        "-f",
        action="store_true",
        help="keep reading new events as the recording grows (like tail -f)",
    )
    parser.add_argument(
        "--filter",
        metavar="EXPR",
        default="",
        help="show only the flows matching EXPR from the start (docs/filters.md; `/` changes it)",
    )


def run(args: argparse.Namespace) -> int:
    # Imported here so that other subcommands do not pay for loading Textual.
    from ..tui import RecordingSource, run_tui

    path: str = args.file
    filter_text: str = args.filter.strip()
    if filter_text:
        try:
            parse_filter(filter_text)
        except FilterError as exc:
            return fail(f"bad filter: {exc}")
    deadline = time.monotonic() + (HEADER_WAIT if args.follow else 0.0)
    while True:
        try:
            source = RecordingSource.open(path, follow=args.follow)
            break
        except OSError as exc:
            return fail(safe_text(f"cannot open {path} ({exc.strerror or exc})"))
        except RecordingError as exc:
            # A recording just created by a proxy may not have its header line yet.
            if time.monotonic() < deadline and os.path.getsize(path) == 0:
                time.sleep(0.1)
                continue
            return fail(safe_text(f"{path}: {exc}"))
    title = safe_text(f"golem-proxy — {os.path.basename(path)}")
    run_tui(source, source.profile, title, header=source.header, filter_text=filter_text)
    return 0
