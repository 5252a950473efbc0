"""``golem-proxy verify FILE --target HOST:PORT``: re-send a trace to a live plugin and diff."""

from __future__ import annotations

import argparse
import json
import sys
from functools import partial
from typing import Any

import trio
from rich.console import Console

from ..net.addresses import Address, parse_address
from ..recording.format import RecordingError
from ..replay.diffing import Comparator
from ..replay.index import load_exchanges
from ..replay.matching import IgnoreRules
from ..replay.render import render_verify
from ..replay.verify import update_trace, verify_trace

NAME = "verify"
HELP = "re-send a trace's requests to a live plugin and compare the answers (client replay)"
ORDER = 41
EXIT_DIFFERENT = 1
EXIT_USAGE = 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help="recording to verify")
    parser.add_argument(
        "--target",
        type=parse_address,
        required=True,
        metavar="HOST:PORT",
        help="live plugin, main channel (or unix:PATH)",
    )
    parser.add_argument(
        "--gh-target",
        type=parse_address,
        metavar="HOST:PORT",
        help="live plugin, Grasshopper channel",
    )
    parser.add_argument(
        "--ignore",
        action="append",
        default=[],
        metavar="RESULT_PATH",
        help="leave a path out of the comparison: result.x or METHOD:result.x",
    )
    parser.add_argument(
        "--float-tolerance",
        type=float,
        default=0.0,
        metavar="X",
        help="numbers within X of each other are equal",
    )
    parser.add_argument(
        "--timeout", type=float, default=30.0, help="seconds to wait for each answer (default 30)"
    )
    parser.add_argument(
        "--update", action="store_true", help="rewrite the trace with the live responses"
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON")


def run(args: argparse.Namespace) -> int:
    try:
        trace = load_exchanges(args.file)
        comparator = Comparator(
            IgnoreRules.parse(args.ignore), float_tolerance=args.float_tolerance
        )
    except (OSError, RecordingError, ValueError) as exc:
        print(f"golem-proxy verify: {exc}", file=sys.stderr)
        return EXIT_USAGE
    targets = _targets(trace.routes, args.target, args.gh_target)
    try:
        result = trio.run(partial(verify_trace, timeout=args.timeout), trace, targets, comparator)
    finally:
        trace.close()
    if args.json:
        payload: dict[str, Any] = {"ok": result.ok, "exchanges": len(result.checks)}
        payload["failed"] = [check.to_json() for check in result.failed]
        print(json.dumps(payload, indent=2, ensure_ascii=False))
    else:
        render_verify(result, Console(highlight=False))
    if args.update:
        changed = update_trace(args.file, result, comparator)
        print(f"verify: updated {changed} responses in {args.file}", file=sys.stderr)
        return 0
    return 0 if result.ok else EXIT_DIFFERENT


def _targets(routes: list[str], target: Address, gh_target: Address | None) -> dict[str, Address]:
    """``main`` (or a single route) → --target, ``gh`` → --gh-target."""
    found = {name: target for name in routes if name != "gh"}
    if "gh" in routes:
        if gh_target is not None:
            found["gh"] = gh_target
        elif len(routes) == 1:
            found["gh"] = target
    return found
