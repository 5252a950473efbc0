"""The ``golem-proxy`` command line."""

from __future__ import annotations

import argparse
from typing import List, Optional

from . import __version__


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="golem-proxy",
        description="Transparent proxy, inspector, recorder and replayer for JSON RPC sockets.",
    )
    parser.add_argument("--version", action="version", version=f"golem-proxy {__version__}")
    parser.add_subparsers(dest="command", metavar="COMMAND")
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    return 0
