"""How a connection names its client in the recording's ``open`` line and the log."""

from __future__ import annotations

import struct

import trio

__all__ = ["peer_name"]


def peer_name(stream: trio.SocketStream) -> str:
    """``HOST:PORT`` of a TCP client; of a Unix socket's, ``unix:PATH`` when it is bound,
    else ``unix:pid=N`` (the peer's process where the OS says it), else ``unix``; ``?`` when
    the peer is gone before it was asked."""
    try:
        peer = stream.socket.getpeername()
    except OSError:
        return "?"
    if isinstance(peer, tuple):
        return f"{peer[0]}:{peer[1]}"
    if peer:
        return f"unix:{peer}"
    # A Unix client socket has no name; the peer's process id is what tells two clients (the
    # CLI and the MCP server, say) apart, where the OS reports it (Linux SO_PEERCRED).
    peercred = getattr(trio.socket, "SO_PEERCRED", None)
    if peercred is None:
        return "unix"
    try:
        pid, _, _ = struct.unpack(
            "3i", stream.socket.getsockopt(trio.socket.SOL_SOCKET, peercred, struct.calcsize("3i"))
        )
    except OSError:
        return "unix"
    return f"unix:pid={pid}"
