"""``golem-proxy diff A B``: semantic, GUID-aware diff of two traces."""

from __future__ import annotations

import argparse
import json

from ..replay.index import load_exchanges
from ..replay.render import render_diff
from ..replay.tracediff import DamagedTrace, diff_traces
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


ROLES = ("trace A", "trace B")
"""How every error names each trace, with its file (`reading`)."""


def run(args: argparse.Namespace) -> int:
    comparator = comparator_from(args)
    paths = (args.a, args.b)
    with reading(args.a, ROLES[0]):
        a = load_exchanges(args.a)
    try:
        with reading(args.b, ROLES[1]):
            b = load_exchanges(args.b)
    except CommandError:
        a.close()
        raise
    try:
        try:
            diff = diff_traces(a, b, comparator)
        except DamagedTrace as damaged:
            with reading(paths[damaged.side], ROLES[damaged.side]):
                raise damaged.error from None
        if args.json:
            print(json.dumps(diff.to_json(), indent=2, ensure_ascii=False))
        else:
            render_diff(diff, console(), (args.a, args.b))
    finally:
        a.close()
        b.close()
    return 0 if diff.equal else EXIT_DIFFERENT
