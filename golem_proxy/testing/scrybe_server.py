"""The stand-in app on a Unix socket (trio), plus a misbehaving mode that answers every
request with one configured raw reply, as an imposter or a broken server would."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Optional

import trio

from .scrybe_app import ScrybeApp


def short_socket_dir() -> str:
    """A private directory for socket files: Unix socket paths must stay under 108 bytes,
    which pytest's tmp_path can exceed."""
    return tempfile.mkdtemp(prefix="scr", dir="/tmp")


@dataclass
class AppServer:
    """Serves ``app`` on ``path``; with ``raw_reply`` set, answers each request's first line
    with exactly those bytes and closes the connection instead."""

    path: str
    app: ScrybeApp = field(default_factory=ScrybeApp)
    raw_reply: Optional[bytes] = None
    received: list[bytes] = field(default_factory=list)
    """What each connection sent, in connection order."""
    connections: int = 0

    port: int = 0
    """With ``path`` empty: listen on 127.0.0.1 instead, on this port once bound."""

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        if not self.path:
            listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
            self.port = listeners[0].socket.getsockname()[1]
            task_status.started()
            await trio.serve_listeners(self._handle, listeners)
            return
        sock = trio.socket.socket(trio.socket.AF_UNIX, trio.socket.SOCK_STREAM)
        await sock.bind(self.path)
        sock.listen(64)
        listener = trio.SocketListener(sock)
        task_status.started()
        try:
            await trio.serve_listeners(self._handle, [listener])
        finally:
            if os.path.exists(self.path):
                os.unlink(self.path)

    async def _handle(self, stream: trio.SocketStream) -> None:
        self.connections += 1
        index = len(self.received)
        self.received.append(b"")
        buffer = b""
        try:
            async for chunk in stream:
                self.received[index] += chunk
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    if self.raw_reply is not None:
                        await stream.send_all(self.raw_reply)
                        return
                    await stream.send_all(self.app.respond(line))
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass  # the client gave up on a reply (e.g. at the frame cap)
        finally:
            await stream.aclose()


def main(argv: Optional[Sequence[str]] = None) -> None:
    """``python -m golem_proxy.testing.scrybe_server PATH [DISK.json]``: serve the stand-in app
    until SIGINT or SIGTERM (for tests that run golem-proxy as a separate process). A bad
    argument ends it with argparse's usage line and exit 2."""
    parser = argparse.ArgumentParser(
        prog="python -m golem_proxy.testing.scrybe_server",
        description="Serve the stand-in Scrybe app (JSON-RPC 2.0, one message a line) on a "
        "Unix socket until SIGINT or SIGTERM, then remove the socket file (docs/scrybe.md).",
    )
    parser.add_argument("path", metavar="PATH", help="the Unix socket to make and listen on")
    parser.add_argument(
        "disk",
        metavar="DISK.json",
        nargs="?",
        help="the app's files: a JSON object of path to content (default: none)",
    )
    args = parser.parse_args(argv)
    # Checked here, so that a mistake is one line rather than a traceback from inside trio.
    if os.path.lexists(args.path):
        parser.error(f"{args.path} already exists")
    if len(os.fsencode(args.path)) >= _SUN_PATH:
        parser.error(f"{args.path} is too long for a Unix socket (at most {_SUN_PATH - 1} bytes)")
    disk: dict[str, str] = {}
    if args.disk is not None:
        try:
            with open(args.disk, encoding="utf-8") as file:
                disk = json.load(file)
        except (OSError, ValueError) as exc:
            parser.error(f"cannot read {args.disk} ({exc})")
        if not isinstance(disk, dict) or not all(
            isinstance(key, str) and isinstance(value, str) for key, value in disk.items()
        ):
            parser.error(f"{args.disk} is not a JSON object of path to content")
    server = AppServer(args.path, ScrybeApp(disk))
    with contextlib.suppress(KeyboardInterrupt):
        trio.run(_serve_until_signal, server)


_SUN_PATH = 108
"""The size of ``sockaddr_un.sun_path`` on Linux, its terminating NUL included."""


async def _serve_until_signal(server: AppServer) -> None:
    """Serve until SIGINT or SIGTERM, then remove the socket file (`AppServer.serve`)."""
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with trio.open_nursery() as nursery:
            await nursery.start(server.serve)
            async for _ in signals:
                nursery.cancel_scope.cancel()
                return


if __name__ == "__main__":
    main()
