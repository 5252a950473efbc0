"""The ``golem-proxy`` command line: one command, one module per subcommand.

Each module in `golem_proxy.commands` defines ``NAME``, ``HELP``, ``ORDER``,
``add_arguments(parser)`` and ``run(args) -> int`` (the exit code). They are found by listing
the package, so adding a subcommand touches nothing else.

Errors have one style for every subcommand (`golem_proxy.commands._common`): one line on
stderr, ``golem-proxy: <what> (<why>)``, exit 2 for a usage, setup or input error; exit 1 only
when a command ran and found differences or violations. ``--debug`` shows the traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import re
import sys
import traceback
from types import ModuleType
from typing import NoReturn, Optional

from . import __version__, commands
from .commands._common import EXIT_INTERNAL, EXIT_USAGE, error_line, print_error, unwrap

__all__ = ["EXIT_USAGE", "build_parser", "main"]

DEBUG_ENV = "GOLEM_PROXY_DEBUG"


class _Parser(argparse.ArgumentParser):
    """argparse with the command line's one-line error style instead of usage + message."""

    def error(self, message: str) -> NoReturn:
        # "argument --listen: 'x': expected HOST:PORT" reads as "replay --listen: …".
        command = self.prog.split(" ", 1)[1] if " " in self.prog else ""
        choice = _INVALID_COMMAND.match(message)
        if choice is not None:
            names = choice.group(2).replace("'", "")
            message = f"unknown command {choice.group(1)} (choose from {names})"
        elif message.startswith("argument "):
            message = message[len("argument ") :]
            message = f"{command} {message}" if command else message
        elif command:
            message = f"{command}: {message}"
        if not message.endswith(")"):
            message += f" (see golem-proxy {command + ' ' if command else ''}--help)"
        print_error(message)
        raise SystemExit(EXIT_USAGE)


_INVALID_COMMAND = re.compile(r"argument COMMAND: invalid choice: ('[^']*') \(choose from (.*)\)$")


def _command_modules() -> list[ModuleType]:
    found = [
        importlib.import_module(f"{commands.__name__}.{info.name}")
        for info in pkgutil.iter_modules(commands.__path__)
        if not info.name.startswith("_")
    ]
    return sorted(found, key=lambda module: (getattr(module, "ORDER", 100), module.NAME))


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="golem-proxy",
        description=(
            "Transparent proxy, inspector, recorder and replayer for local JSON RPC sockets "
            "(GOLEM-3DMCP, JSON-RPC over NDJSON)."
        ),
    )
    parser.add_argument("--version", action="version", version=f"golem-proxy {__version__}")
    parser.add_argument(
        "--debug",
        action="store_true",
        help=f"show the traceback of an error (also: {DEBUG_ENV}=1)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for module in _command_modules():
        child = sub.add_parser(module.NAME, help=module.HELP, description=module.HELP)
        module.add_arguments(child)
        # Also after the subcommand, where one types it when a command just failed.
        child.add_argument(
            "--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS
        )
        child.set_defaults(run=module.run)
    return parser


def main(argv: Optional[list[str]] = None) -> int:
    """Run the command line; returns the process exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a usage error already printed
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    if args.command is None:
        parser.print_help()
        return 0
    debug = bool(args.debug or os.environ.get(DEBUG_ENV))
    try:
        code: int = args.run(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # e.g. `golem-proxy show | head`
        sys.stderr.close()
        return 0
    except SystemExit:
        raise
    except BaseException as exc:
        return _report(exc, debug)
    return code


def _report(exc: BaseException, debug: bool) -> int:
    """Print what went wrong and return the exit code; re-raises what is not an error (a
    KeyboardInterrupt or SystemExit wrapped in trio's exception group)."""
    inner = unwrap(exc)
    if isinstance(inner, KeyboardInterrupt):
        return 130
    if isinstance(inner, SystemExit):
        raise inner
    if isinstance(inner, BrokenPipeError):
        sys.stderr.close()
        return 0
    if not isinstance(inner, Exception) and inner is exc:
        raise exc  # e.g. GeneratorExit: not ours to turn into a message
    if debug:
        traceback.print_exception(type(exc), exc, exc.__traceback__)
    line = error_line(exc)
    if line is not None:
        print_error(line)
        return EXIT_USAGE
    if not debug:
        name = type(inner).__name__
        detail = f"{name}: {inner}" if str(inner) else name
        print_error(f"internal error: {detail} (rerun with --debug for the traceback)")
    return EXIT_INTERNAL
