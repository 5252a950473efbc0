"""``golem-proxy intercept unix:PATH``: decide held frames of a run whose stdin is not yours.

``golem-proxy mcp --intercept FILTER --console unix:PATH`` takes its intercept commands on
that socket (its stdin is the MCP client's). This relays each line typed here to it and
prints the answers, until stdin ends (Ctrl-D) or the run closes the socket. Both ends exit 0;
a line on stderr says it connected, and another when the run closed the console first.
"""

from __future__ import annotations

import argparse
import sys
from typing import BinaryIO

import trio

from ..live.intercept_console import MAX_LINE, read_line, stdin_of_our_own
from ..net.addresses import Address
from ..net.listeners import connect, connect_reason
from ._common import CommandError, address_arg

NAME = "intercept"
HELP = "decide held frames through the console socket of golem-proxy mcp --console"
ORDER = 45  # a live tool, beside call

_CHUNK = 65536


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "console",
        type=address_arg,
        metavar="unix:PATH",
        help="the socket given to golem-proxy mcp --console",
    )


def run(args: argparse.Namespace) -> int:
    address: Address = args.console
    if not address.is_unix:
        raise CommandError(f"intercept: {address} is not unix:PATH")
    return trio.run(_relay, address)


async def _relay(address: Address) -> int:
    try:
        stream = await connect(address)
    except OSError as exc:
        raise CommandError(f"intercept: cannot connect to {address}", connect_reason(exc)) from None
    _say(f"connected to {address}: type a command and Enter (? lists them), Ctrl-D to leave")
    stdin_ended = False
    async with stream, trio.open_nursery() as nursery:
        nursery.start_soon(_print_answers, stream, nursery.cancel_scope)
        try:
            await _send_lines(stream)
            stdin_ended = True
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            nursery.cancel_scope.cancel()  # the run ended: its last answers are printed
    if not stdin_ended:
        _say("the run closed the console")
    return 0


def _say(line: str) -> None:
    """One line about the session itself, on stderr: stdout holds only the run's answers."""
    print(f"golem-proxy intercept: {line}", file=sys.stderr, flush=True)


async def _send_lines(stream: trio.SocketStream) -> None:
    """Send stdin's lines; at its end, say so and let the answers still owed arrive."""
    if sys.stdin is None:
        await stream.send_eof()
        return
    # A reader of its own: the thread waiting for a line is abandoned, still holding its
    # reader's lock, when the run closes the console; on sys.stdin's reader the interpreter
    # would abort at exit (`Fatal Python error: _enter_buffered_busy`, exit 134).
    source: BinaryIO = stdin_of_our_own()
    while True:
        line, dropped = await trio.to_thread.run_sync(read_line, source, abandon_on_cancel=True)
        if dropped:
            print(f"line too long ({dropped} bytes, at most {MAX_LINE}): ignored", file=sys.stderr)
            continue
        if not line:
            await stream.send_eof()
            return
        await stream.send_all(line if line.endswith(b"\n") else line + b"\n")


async def _print_answers(stream: trio.SocketStream, done: trio.CancelScope) -> None:
    """Print what the run answers, as it comes; when it closes, stop reading stdin."""
    out = sys.stdout.buffer
    while True:
        try:
            data = await stream.receive_some(_CHUNK)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            data = b""
        if not data:
            done.cancel()
            return
        out.write(data)
        out.flush()
