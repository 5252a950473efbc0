"""The ``golem-proxy`` command line: one command, one module per subcommand.

Each module in `golem_proxy.commands` defines ``NAME``, ``HELP``, ``ORDER``,
``add_arguments(parser)`` and ``run(args) -> int`` (the exit code). They are found by listing
the package, so adding a subcommand touches nothing else.

Errors have one style for every subcommand (`golem_proxy.commands._common`): one line on
stderr, ``golem-proxy: <what> (<why>)``, exit 2 for a usage, setup or input error; exit 1 only
when a command ran and found differences or violations. ``--debug`` shows the traceback.

A closed output (``golem-proxy show … | head -1``) ends every command the same way, here and
nowhere else: quietly, with exit code 0, as ``git log | head -1`` does.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import pkgutil
import re
import select
import sys
import traceback
from types import ModuleType
from typing import NoReturn, Optional

from . import __version__, commands
from .commands._common import (
    EXIT_INTERNAL,
    EXIT_OK,
    EXIT_USAGE,
    error_line,
    print_error,
    unwrap,
)

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


def _command_modules(only: Optional[str] = None) -> list[ModuleType]:
    """Every subcommand's module, in the help's order; with ``only``, that command's alone
    (a module is named as its command, ``-`` as ``_``)."""
    names = [
        info.name
        for info in pkgutil.iter_modules(commands.__path__)
        if not info.name.startswith("_")
    ]
    if only is not None:
        names = [name for name in names if name == only.replace("-", "_")]
    found = [importlib.import_module(f"{commands.__name__}.{name}") for name in names]
    return sorted(found, key=lambda module: (getattr(module, "ORDER", 100), module.NAME))


def _command_named(argv: list[str]) -> Optional[str]:
    """The subcommand ``argv`` names, when it names one (the first argument that is no
    option: the top level takes flags only); None for none, an unknown one, or a help asked
    for before it (which lists every command)."""
    for arg in argv:
        if arg in ("-h", "--help", "--"):
            return None
        if "_" in arg:  # a module's name, not a command's (mcp_verify is mcp-verify)
            return None
        if not arg.startswith("-"):
            known = {info.name for info in pkgutil.iter_modules(commands.__path__)}
            module = arg.replace("-", "_")
            return arg if module in known and not module.startswith("_") else None
    return None


def build_parser(only: Optional[str] = None) -> argparse.ArgumentParser:
    """The command line's parser: every subcommand, or with ``only`` that one alone (a
    command run imports its own module, not every command's: ~0.25 s less at each start)."""
    parser = _Parser(
        prog="golem-proxy",
        description=(
            "Transparent proxy, inspector, recorder and replayer for local JSON RPC sockets "
            "(GOLEM-3DMCP, JSON-RPC over NDJSON)."
        ),
        epilog=(
            "Exit codes: 0 done (also when the reader of the output went away, as in "
            "`golem-proxy show FILE | head -1`), 1 the command ran and found differences or "
            "violations, 2 a usage, setup or input error, 130 interrupted."
        ),
    )
    parser.add_argument("--version", action="version", version=f"golem-proxy {__version__}")
    parser.add_argument(
        "--debug",
        action="store_true",
        help=f"show the traceback of an error (also: {DEBUG_ENV}=1)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for module in _command_modules(only):
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
    parser = build_parser(_command_named(sys.argv[1:] if argv is None else argv))
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
        # What is still buffered goes now: a reader that went away shows here, where it is
        # handled, rather than at the interpreter's exit.
        sys.stdout.flush()
    except KeyboardInterrupt:
        return 130
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
    if isinstance(inner, BrokenPipeError) and _stdout_closed():
        return _end_quietly()
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


def _stdout_closed() -> bool:
    """True when the reader of stdout went away (``| head`` exited): a BrokenPipeError from a
    socket (a plugin that hung up) is an error to report, not a reason to end quietly."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return False
    if not hasattr(select, "poll"):
        return True  # no poll (Windows): a closed output is by far the likeliest
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    try:
        ready = poller.poll(0)
    except OSError:
        return False
    # A pipe whose reader is gone polls as an error condition (Linux, macOS).
    return any(flags & (select.POLLERR | select.POLLHUP) for _, flags in ready)


def _end_quietly() -> int:
    """End a command whose output was closed: nothing on stderr, `EXIT_OK`. stdout now points
    at /dev/null so that the interpreter's last flush of what it still buffers cannot fail."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    return EXIT_OK
