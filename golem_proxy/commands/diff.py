"""``golem-proxy diff A B``: semantic, GUID-aware diff of two traces."""

from __future__ import annotations

import argparse
import json

from ..replay.index import load_exchanges
from ..replay.render import render_diff
from ..replay.tracediff import diff_traces
from ._common import CommandError, console, reading
from ._comparing import add_comparison_arguments, comparator_from
from ._options import add_recording

NAME = "diff"
HELP = "compare two traces exchange by exchange (GUID-aware, with tolerances)"
ORDER = 42
EXIT_DIFFERENT = 1


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_recording(parser, "first recording (the reference)", dest="a", metavar="A")
    add_recording(parser, "second recording", dest="b", metavar="B")
    add_comparison_arguments(
        parser,
        ignore_metavar="PATH",
        ignore_help="leave a path out: params.x, result.x, or METHOD:result.x",
    )
    parser.add_argument("--json", action="store_true", help="print the diff as JSON")


def run(args: argparse.Namespace) -> int:
    comparator = comparator_from(args)
    with reading(args.a, "trace A"):
        a = load_exchanges(args.a)
    try:
        with reading(args.b, "trace B"):
            b = load_exchanges(args.b)
    except CommandError:
        a.close()
        raise
    try:
        diff = diff_traces(a, b, comparator)
        if args.json:
            print(json.dumps(diff.to_json(), indent=2, ensure_ascii=False))
        else:
            render_diff(diff, console(), (args.a, args.b))
    finally:
        a.close()
        b.close()
    return 0 if diff.equal else EXIT_DIFFERENT
