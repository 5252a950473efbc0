"""The ``golem-proxy`` command line: one command, one module per subcommand.

Each module in `golem_proxy.commands` defines ``NAME``, ``HELP``, ``ORDER``,
``add_arguments(parser)`` and ``run(args) -> int`` (the exit code). They are found by listing
the package, so adding a subcommand touches nothing else.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from types import ModuleType
from typing import Optional

from . import __version__, commands

EXIT_USAGE = 2


def _command_modules() -> list[ModuleType]:
    found = [
        importlib.import_module(f"{commands.__name__}.{info.name}")
        for info in pkgutil.iter_modules(commands.__path__)
        if not info.name.startswith("_")
    ]
    return sorted(found, key=lambda module: (getattr(module, "ORDER", 100), module.NAME))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="golem-proxy",
        description=(
            "Transparent proxy, inspector, recorder and replayer for local JSON RPC sockets "
            "(GOLEM-3DMCP, JSON-RPC over NDJSON)."
        ),
    )
    parser.add_argument("--version", action="version", version=f"golem-proxy {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in _command_modules():
        child = sub.add_parser(module.NAME, help=module.HELP, description=module.HELP)
        module.add_arguments(child)
        child.set_defaults(run=module.run)
    return parser


def main(argv: Optional[list[str]] = None) -> int:
    """Run the command line; returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    try:
        code: int = args.run(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # e.g. `golem-proxy show | head`
        sys.stderr.close()
        return 0
    return code
