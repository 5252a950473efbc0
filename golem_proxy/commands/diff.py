"""``golem-proxy diff A B``: semantic, GUID-aware diff of two traces."""

from __future__ import annotations

import argparse
import json
import sys

from rich.console import Console

from ..recording.format import RecordingError
from ..replay.diffing import Comparator
from ..replay.index import load_exchanges
from ..replay.matching import IgnoreRules
from ..replay.render import render_diff
from ..replay.tracediff import diff_traces

NAME = "diff"
HELP = "compare two traces exchange by exchange (GUID-aware, with tolerances)"
ORDER = 42
EXIT_DIFFERENT = 1
EXIT_USAGE = 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("a", metavar="A", help="first recording (the reference)")
    parser.add_argument("b", metavar="B", help="second recording")
    parser.add_argument(
        "--ignore",
        action="append",
        default=[],
        metavar="PATH",
        help="leave a path out: params.x, result.x, or METHOD:result.x",
    )
    parser.add_argument(
        "--float-tolerance",
        type=float,
        default=0.0,
        metavar="X",
        help="numbers within X of each other are equal",
    )
    parser.add_argument("--json", action="store_true", help="print the diff as JSON")


def run(args: argparse.Namespace) -> int:
    try:
        a = load_exchanges(args.a)
        b = load_exchanges(args.b)
        comparator = Comparator(
            IgnoreRules.parse(args.ignore), float_tolerance=args.float_tolerance
        )
    except (OSError, RecordingError, ValueError) as exc:
        print(f"golem-proxy diff: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        diff = diff_traces(a, b, comparator)
        if args.json:
            print(json.dumps(diff.to_json(), indent=2, ensure_ascii=False))
        else:
            render_diff(diff, Console(highlight=False), (args.a, args.b))
    finally:
        a.close()
        b.close()
    return 0 if diff.equal else EXIT_DIFFERENT
