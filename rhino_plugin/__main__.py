"""``python -m rhino_plugin --headless``: run the headless plugin until shutdown or a signal.

When both channels listen it prints one line to stdout and flushes it:

    rhino_plugin headless ready: main=127.0.0.1:9876 gh=127.0.0.1:9877 seed=0
        behaviour=golem-3dmcp@9819b31

(one line; wrapped here). ``golem-proxy plugin`` runs the same (`add_arguments` and `run`,
shared rather than copied), without the ``--headless`` flag to type.

Exit status 0 after the ``shutdown`` method, Ctrl-C (SIGINT) or SIGTERM; 2 for bad arguments
(argparse) or a port that cannot be bound.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import signal
import socket
import sys
from types import FrameType
from typing import Optional

from golem_core.dispatcher import DEFAULT_UI_TIMEOUT

from .behaviours import BEHAVIOURS, DEFAULT_BEHAVIOUR, PluginOptions
from .plugin import HeadlessPlugin

__all__ = ["add_arguments", "build_parser", "main", "run"]

WAIT_SLICE_SECONDS = 0.2


class _StopSignal:
    """A signal handler that only records which signal arrived."""

    def __init__(self) -> None:
        self.received: Optional[int] = None

    def __call__(self, signum: int, frame: Optional[FrameType]) -> None:
        self.received = signum


def _positive(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError("must be greater than zero")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m rhino_plugin",
        description="GOLEM-3DMCP plugin peer over an in-memory document (stdlib only).",
    )
    add_arguments(parser)
    return parser


def add_arguments(parser: argparse.ArgumentParser, *, require_headless: bool = True) -> None:
    """The plugin's options on ``parser``. ``require_headless`` is False where running headless
    goes without saying (``golem-proxy plugin``): ``--headless`` is then accepted, not needed."""
    parser.add_argument(
        "--headless",
        action="store_true",
        required=require_headless,
        help="run without Rhino, over an in-memory document"
        + (" (required)" if require_headless else " (always, here)"),
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument(
        "--listen-public",
        action="store_true",
        help="allow a non-loopback --host (anyone who reaches it can drive the document)",
    )
    parser.add_argument("--port", type=int, default=9876, help="main channel port (0: any)")
    parser.add_argument(
        "--gh-port", type=int, default=9877, help="Grasshopper channel port (0: any)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed for GUIDs (default 0)")
    parser.add_argument(
        "--allow-scripts",
        action="store_true",
        help="let scripting.* execute the Python code clients send",
    )
    parser.add_argument(
        "--debug-methods",
        action="store_true",
        help="register debug.sleep {seconds} (tests and demos)",
    )
    parser.add_argument(
        "--behaviour",
        choices=BEHAVIOURS,
        default=DEFAULT_BEHAVIOUR,
        help=f"which plugin to play on the wire (default {DEFAULT_BEHAVIOUR})",
    )
    parser.add_argument(
        "--ui-timeout",
        type=_positive,
        default=DEFAULT_UI_TIMEOUT,
        help="seconds a handler may take on the UI thread (default 30)",
    )


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name: only "localhost" is known to be local
        return False


def _unbindable(host: str, ports: list[int]) -> str:
    """Which of the requested ports cannot be bound (the error itself does not say), as
    HOST:PORT; all of them when a probe cannot tell."""
    busy = []
    for port in ports:
        if port == 0:
            continue
        probe = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server binds
        try:
            probe.bind((host, port))
        except OSError:
            busy.append(port)
        finally:
            probe.close()
    chosen = busy or [port for port in ports if port] or [0]
    return " and ".join(f"{host}:{port}" for port in chosen)


def main(argv: Optional[list[str]] = None) -> int:
    """Run until stopped. Returns the exit status."""
    return run(build_parser().parse_args(argv))


def run(args: argparse.Namespace, prog: str = "rhino_plugin") -> int:
    """Run the plugin the parsed ``args`` describe (`add_arguments`) until ``shutdown``, SIGINT
    or SIGTERM. Returns the exit status: 0, or 2 after one line on stderr, ``PROG: …``, for
    an address it must not or cannot listen on."""
    if not _is_loopback(args.host) and not args.listen_public:
        print(
            f"{prog}: refusing to listen on {args.host} (not a loopback address; pass "
            "--listen-public to listen there)",
            file=sys.stderr,
        )
        return 2
    options = PluginOptions(
        seed=args.seed,
        allow_scripts=args.allow_scripts,
        debug_methods=args.debug_methods,
        ui_timeout=args.ui_timeout,
        behaviour=args.behaviour,
    )
    plugin = HeadlessPlugin(args.host, args.port, args.gh_port, options)
    try:
        (main_host, main_port), (gh_host, gh_port) = plugin.start()
    except OSError as exc:
        where = _unbindable(args.host, [args.port, args.gh_port])
        reason = os.strerror(exc.errno) if exc.errno else str(exc)
        print(f"{prog}: cannot listen on {where} ({reason.lower()})", file=sys.stderr)
        return 2

    stop_signal = _StopSignal()
    signal.signal(signal.SIGINT, stop_signal)
    signal.signal(signal.SIGTERM, stop_signal)
    print(
        f"rhino_plugin headless ready: main={main_host}:{main_port} "
        f"gh={gh_host}:{gh_port} seed={options.seed} behaviour={options.behaviour}",
        flush=True,
    )
    try:
        # Short waits: the handler only records the signal (raising from it could leave a
        # threading lock held), and the loop notices it within one slice.
        while not plugin.wait(WAIT_SLICE_SECONDS) and stop_signal.received is None:
            pass
        if stop_signal.received is not None:
            name = signal.Signals(stop_signal.received).name
            print(f"{prog}: {name} received, stopping", file=sys.stderr, flush=True)
    finally:
        plugin.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
