"""The stand-in app on a Unix socket (trio), plus a misbehaving mode that answers every
request with one configured raw reply, as an imposter or a broken server would."""

from __future__ import annotations

import contextlib
import os
import signal
import tempfile
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


def main() -> None:
    """``python -m golem_proxy.testing.scrybe_server PATH [DISK.json]``: serve the stand-in app
    until killed (for tests that run golem-proxy as a separate process)."""
    import json
    import sys

    disk = {}
    if len(sys.argv) > 2:
        with open(sys.argv[2]) as file:
            disk = json.load(file)
    server = AppServer(sys.argv[1], ScrybeApp(disk))
    with contextlib.suppress(KeyboardInterrupt):
        trio.run(_serve_until_signal, server)


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
