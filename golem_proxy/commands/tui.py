"""``golem-proxy tui FILE [--follow] [--filter EXPR] [--target HOST:PORT]``: browse a
recording, or tail one being written; `r` sends a request again to ``--target``."""

from __future__ import annotations

import argparse
import os
import time

from ..analysis.filters import parse_filter
from ..recording.format import RecordingError
from ..terminal import safe_text
from ._common import CommandError, os_reason
from ._options import add_address, add_recording

NAME = "tui"
HELP = "Open a recording in the terminal UI (with --follow, tail one being written)."
ORDER = 60

HEADER_WAIT = 10.0
"""Seconds ``--follow`` waits for a new file's header line to be written."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_recording(parser)
    parser.add_argument(
        "--follow",
        "-f",
        action="store_true",
        help="keep reading new events as the recording grows (like tail -f)",
    )
    add_address(
        parser,
        "--target",
        "a live plugin (or unix:PATH) that `r` sends the selected request to again",
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
        parse_filter(filter_text)  # a bad one: FilterError, one line from golem_proxy.cli
    deadline = time.monotonic() + (HEADER_WAIT if args.follow else 0.0)
    while True:
        try:
            source = RecordingSource.open(path, follow=args.follow)
            break
        except OSError as exc:
            raise CommandError(f"{path}: {os_reason(exc)}") from None
        except RecordingError as exc:
            # A recording just created by a proxy may not have its header line yet.
            if time.monotonic() < deadline and os.path.getsize(path) == 0:
                time.sleep(0.1)
                continue
            text = str(exc)
            raise CommandError(text if text.startswith(f"{path}:") else f"{path}: {text}") from None
    title = safe_text(f"golem-proxy — {os.path.basename(path)}")
    run_tui(
        source,
        source.profile,
        title,
        header=source.header,
        filter_text=filter_text,
        resend_target=args.target,
    )
    return 0
