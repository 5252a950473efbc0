"""``golem-proxy mcp -- COMMAND``: wrap an MCP server, observing both of its hops at once.

Put it in an MCP client's configuration in place of the server's command. It starts COMMAND
as its child and relays the client's stdio to it byte for byte (the MCP hop), starts GOLEM
routes of its own in front of the plugin and points the child at them through the
environment (the GOLEM hop), and records both in one timeline where every GOLEM flow names
the tool call that caused it (docs/mcp.md). Its stdout carries the child's bytes and nothing
else: the live log goes to stderr or ``--log FILE``, from the observing process it starts
(``--observer child-process``, the default) or from its own (``in-process``);
commands/_mcp_serve.py serves both ways.
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import shlex
import sys
from typing import Optional, TextIO

import trio

from golem_core.profiles import GOLEM, MCP

from ..live.attribution import ToolCallTracker
from ..live.connection_attribution import ConnectionAttribution
from ..live.log_output import MCP_CLOSE_TIMEOUT, TerminalOutput, print_closing
from ..live.redact_names import hidden_already, names_spared, tool_call_counterpart
from ..live.session import SessionConfig
from ..live.stdio_child import ChildStartError
from ..net.addresses import Address, Route
from ..recording.files import open_private
from ..recording.format import RouteInfo
from ..recording.safe_paths import removed_unless_started
from ..terminal import safe_text
from ._common import CommandError, error_line, unwrap
from ._mcp_serve import MCP_ROUTE, ServerPlan, serve, serve_forwarding
from ._options import CHILD_PROCESS, add_address, add_observer, add_timeout, check_spool
from .proxy import (
    add_session_arguments,
    reserved_record,
    session_options,
    verbosity_of,
)

NAME = "mcp"
HELP = "Wrap an MCP server: relay its stdio, proxy its GOLEM calls, record both layers."
ORDER = 12


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.usage = "golem-proxy mcp [OPTIONS] -- COMMAND [ARGS...]"
    add_address(
        parser,
        "--upstream",
        "the plugin's main socket (default 127.0.0.1:9876)",
        default=Address("127.0.0.1", 9876),
    )
    add_address(
        parser,
        "--gh-upstream",
        "the plugin's Grasshopper socket (default 127.0.0.1:9877)",
        default=Address("127.0.0.1", 9877),
    )
    parser.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="set a variable in the server's environment (after the GOLEM_RHINO_HOST, "
        "GOLEM_RHINO_PORT and GOLEM_GH_PORT that point it at the proxy: it can override them)",
    )
    parser.add_argument(
        "--log",
        metavar="FILE",
        help="write the live log to FILE (created private) instead of stderr",
    )
    add_timeout(
        parser,
        "once the client closes stdin, how long the server may take to exit before it "
        "is terminated, then killed (default 5)",
        flag="--exit-timeout",
        default=5.0,
        metavar="SECONDS",
    )
    add_address(
        parser,
        "--console",
        "with --intercept: take the intercept commands on this private Unix socket "
        "(stdin is the MCP client's); golem-proxy intercept unix:PATH talks to it",
        metavar="unix:PATH",
    )
    add_address(
        parser,
        "--call-feed",
        "tell a stand-in plugin listening on this Unix socket each tools/call before the "
        "server reads it, and each answer, so that it serves every call the GOLEM exchanges "
        "recorded under it (the golem_mcp_session fixture's)",
        metavar="unix:PATH",
    )
    add_observer(
        parser,
        default=CHILD_PROCESS,
        help="where decoding, attribution, the log and the recording run: child-process (the "
        "default: a process of its own, on another core, fed every chunk of both hops "
        "through a pipe; --fault, --intercept and --enforce-limits still decide in this one) "
        "or in-process (in this process, yielding to forwarding: one process, for a machine "
        "with one core to share, or to compare)",
        hold_help="with --observer child-process: how long forwarding may wait in one go for a "
        "recording more than 60 ms behind the wire (as golem-proxy proxy's; default: no limit)",
        tui=False,  # refused here: its help must not promise what it does
    )
    add_session_arguments(
        parser,
        "send accept/edit/drop/answer commands to --console unix:PATH with golem-proxy "
        "intercept unix:PATH (stdin is the MCP client's)",
    )
    parser.add_argument(
        "server", nargs=argparse.REMAINDER, metavar="-- COMMAND [ARGS...]", help="the MCP server"
    )


def run(args: argparse.Namespace) -> int:
    argv = list(args.server)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        raise CommandError("mcp: no server command", "give it after --: golem-proxy mcp -- CMD")
    _check_console(args.intercept, args.console)
    child = args.observer == CHILD_PROCESS
    if args.call_feed is not None and not args.call_feed.is_unix:
        raise CommandError(f"mcp --call-feed: {args.call_feed} is not unix:PATH")
    plan = ServerPlan(
        argv, _env_overrides(args.env), args.exit_timeout, args.console, args.call_feed
    )
    # In one process the tracker annotates the routes' frames; with an observing process of
    # its own, that process makes the session's one tracker (live/layer_taps.py).
    tracker = None if child else ToolCallTracker(MCP)
    options, record_path = session_options(args, GOLEM)
    _warn_of_golem_only_rules(options.redact)
    check_spool(args, child, record_path)
    with removed_unless_started(reserved_record(args, record_path)):
        options = dataclasses.replace(
            options,
            annotate=tracker,
            connections=None if tracker is None else ConnectionAttribution(tracker),
        )
        routes = [
            Route(GOLEM.channels[0], Address("127.0.0.1", 0), args.upstream),
            Route(GOLEM.channels[1], Address("127.0.0.1", 0), args.gh_upstream),
        ]
        log_stream = _open_log(args.log, args.overwrite)
        output = TerminalOutput(log_stream if log_stream is not None else sys.stderr)
        config = SessionConfig(
            routes=routes,
            profile=GOLEM,
            options=options,
            record_path=record_path,
            overwrite=args.overwrite or reserved_record(args, record_path) is not None,
            console=output.console(),
            verbosity=verbosity_of(args),
            layers=(RouteInfo(MCP_ROUTE, "stdio", shlex.join(argv), MCP.name),),
        )
        closing = ""  # the observing process prints its own
        try:
            if tracker is None:
                log_fd = log_stream.fileno() if log_stream is not None else sys.stderr.fileno()
                status = trio.run(serve_forwarding, config, plan, log_fd, args.log_buffer)
            else:
                status, closing = trio.run(serve, config, plan, tracker)
        except BaseException as exc:
            failed = _one_error(exc)
            if failed is None:
                raise
            raise CommandError(failed) from None
        finally:
            output.close(MCP_CLOSE_TIMEOUT)
            if log_stream is not None:
                log_stream.close()
    if closing:
        # On stderr after the log, even when the log goes to a file, as `proxy` and the
        # observing process end: the same line with either observer (and dropped as its
        # line is, when nobody reads stderr).
        print_closing(closing)
    return status


def _check_console(intercept: Optional[str], console: Optional[Address]) -> None:
    """Raises CommandError unless ``--intercept`` and ``--console unix:PATH`` come together."""
    if intercept is not None and console is None:
        raise CommandError(
            "mcp --intercept: needs --console unix:PATH",
            "stdin is the MCP client's: held frames are decided through that socket",
        )
    if console is not None and intercept is None:
        raise CommandError("mcp --console: needs --intercept FILTER")
    if console is not None and not console.is_unix:
        raise CommandError(f"mcp --console: {console} is not unix:PATH", "a private Unix socket")


def _warn_of_golem_only_rules(rules: tuple[str, ...]) -> None:
    """One line on stderr for each ``--redact`` rule that hides a GOLEM request's parameter
    but nothing of the tool call it came from: the MCP hop carries the call first, under
    ``params.arguments``, and would record the value in clear. The rule that would hide it
    there is named, not added: which argument a server makes which parameter of is its own.
    And one for each rule for every method whose path is, on the MCP hop, a tool's or a
    prompt's name, which it leaves alone (`redact_names`). A rule given already, or one that
    hides more, is never suggested."""
    for rule in rules:
        try:
            counterpart = tool_call_counterpart(rule)
            spared = names_spared(rule, rules)
        except ValueError:
            continue  # the session refuses it, saying why
        lines: list[str] = []
        if counterpart is not None and not hidden_already(counterpart, rules):
            where = rule.partition(":")[2] if ":" in rule else rule
            lines.append(
                f"hides GOLEM's {where}; the tool call's arguments are params.arguments.*: "
                f"add --redact {counterpart} to hide it there too"
            )
        if spared is not None:
            lines.append(spared)
        for line in lines:
            sys.stderr.write(safe_text(f"golem-proxy: mcp: --redact {rule} {line}") + "\n")
    sys.stderr.flush()


def _env_overrides(specs: list[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    for spec in specs:
        name, sep, value = spec.partition("=")
        if not sep or not name or "\0" in spec:
            raise CommandError(f"mcp --env: {spec!r} is not NAME=VALUE")
        found[name] = value
    return found


def _open_log(path: Optional[str], overwrite: bool) -> Optional[TextIO]:
    if path is None:
        return None
    try:
        raw = open_private(path, overwrite=overwrite)
    except OSError as exc:
        line = error_line(exc) or str(exc)
        why = "pass --overwrite to replace it" if isinstance(exc, FileExistsError) else None
        raise CommandError(f"mcp --log: {line}", why) from None
    return io.TextIOWrapper(raw, encoding="utf-8", errors="backslashreplace", line_buffering=True)


def _one_error(exc: BaseException) -> Optional[str]:
    """One line for what stopped the run before the server ran (a server that could not be
    started, a listener or recording file that could not be opened), or None for a bug."""
    inner = unwrap(exc)
    line = error_line(inner)
    return f"mcp: {line}" if line is not None and isinstance(inner, ChildStartError) else line
