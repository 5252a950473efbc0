"""What the kernel tells of a connection's peer without reading its bytes: whether it reset or
closed (`peer_state`), waiting for either while its bytes must stay unread (`until_peer_gone`),
and whether a peer that had closed refused the bytes sent to it after (`reset_after_close`).

Apart from the relays that ask (fault_relay.py watches a client while its request is held,
connection.py passes an upstream's close on) because these are questions to a socket, asked
the same way of any peer.
"""

from __future__ import annotations

import errno
import struct
from typing import Optional

import trio

__all__ = ["GONE_POLL", "peer_state", "reset_after_close", "until_peer_gone"]

GONE_POLL = 0.1
"""While bytes the client sent after a held request wait unread, a close or a reset behind them
does not wake a read: the client's socket state is looked at this often (seconds) instead."""
# Linux's TCP states (include/net/tcp_states.h) in which the peer has closed or reset.
_TCP_CLOSE, _TCP_CLOSE_WAIT = 7, 8

# After forwarding bytes to an upstream that already closed, how long to look for the reset a
# fully closed socket answers with (on loopback it is back before the write returns).
_RESET_PROBES = (0.0, 0.001, 0.002, 0.005, 0.01, 0.02)


async def until_peer_gone(sock: trio.socket.SocketType) -> Optional[OSError]:
    """Return once the peer of ``sock`` resets or closes: the error of a reset, or None for a
    close. Only peeks, so a byte the peer sends meanwhile stays for whoever reads ``sock``."""
    while True:
        try:
            data = await sock.recv(1, trio.socket.MSG_PEEK)
        except OSError as exc:
            return exc
        if not data:
            return None
        # Bytes wait behind the held frame: the socket stays readable, so look instead.
        await trio.sleep(GONE_POLL)
        state = peer_state(sock)
        if state == "reset":
            return ConnectionResetError(errno.ECONNRESET, "Connection reset by peer")
        if state == "closed":
            return None


def peer_state(sock: trio.socket.SocketType) -> Optional[str]:
    """``"reset"`` or ``"closed"`` when the peer of ``sock`` has gone, as far as the kernel
    tells without reading (a pending socket error; Linux's TCP state), else None."""
    try:
        if sock.getsockopt(trio.socket.SOL_SOCKET, trio.socket.SO_ERROR):
            return "reset"
    except OSError:
        return None
    info = _tcp_info(sock, 1)
    if info is None:
        return None
    state = info[0]
    if state == _TCP_CLOSE:
        return "reset"
    return "closed" if state == _TCP_CLOSE_WAIT else None


def _tcp_info(sock: trio.socket.SocketType, size: int) -> Optional[bytes]:
    """The first ``size`` bytes of Linux's ``struct tcp_info`` for ``sock``; None where
    there is none (not TCP, not Linux) or it cannot be read."""
    tcp_info = getattr(trio.socket, "TCP_INFO", None)
    if tcp_info is None or sock.family not in (trio.socket.AF_INET, trio.socket.AF_INET6):
        return None
    try:
        return sock.getsockopt(trio.socket.IPPROTO_TCP, tcp_info, size)
    except OSError:
        return None


def reset_at_once(sock: trio.socket.SocketType) -> Optional[bool]:
    """Whether the peer of ``sock``, which had closed its side, answered the bytes just
    written to it with a reset by the time the write returned: its socket was closed, and its
    kernel refused them unread. On loopback a closed peer's reset is there when the write
    returns (200 of 200 tried), a half-closed peer's never is: one that closes later with
    those bytes unread resets too, but it may have read others first. None when ``sock``
    cannot be asked. It reads (and clears) the socket's pending error."""
    try:
        # A reset on a socket whose peer had sent FIN sets EPIPE (ECONNRESET otherwise).
        error = sock.getsockopt(trio.socket.SOL_SOCKET, trio.socket.SO_ERROR)
    except OSError:
        return None
    return error in (errno.ECONNRESET, errno.EPIPE)


_BYTES_ACKED = struct.Struct("=Q")
_BYTES_ACKED_AT = 120
"""Where Linux's ``struct tcp_info`` holds ``tcpi_bytes_acked`` (since 4.2): the bytes the
peer's kernel acknowledged, the SYN's one counted on a socket that connected (not on one a
listener accepted: measured, a connected socket reads 1 before any data, an accepted one 0)."""
_TCP_CLOSE = 7
"""``tcpi_state`` (the first byte of ``struct tcp_info``) of a socket the peer reset."""


def bytes_acked(sock: trio.socket.SocketType, connected: bool) -> Optional[int]:
    """The data bytes sent on ``sock`` (``connected``: it connected, else a listener accepted
    it) that the peer's kernel acknowledged (they reached its socket; whether its application
    read them is not known); None where it cannot be asked (not TCP, not Linux). Still
    readable once the connection was reset."""
    return _acked(_tcp_info(sock, 256), connected)


def _acked(info: Optional[bytes], connected: bool) -> Optional[int]:
    """`bytes_acked` read from ``info``, a ``struct tcp_info`` (None: none)."""
    if info is None or len(info) < _BYTES_ACKED_AT + _BYTES_ACKED.size:
        return None
    acked: int = _BYTES_ACKED.unpack_from(info, _BYTES_ACKED_AT)[0]
    return max(0, acked - 1) if connected else acked


def acked_past(sock: trio.socket.SocketType, offset: int, connected: bool) -> bool:
    """Whether the peer's kernel acknowledged data sent on ``sock`` past its first ``offset``
    bytes (they reached its socket); False where it cannot be told (`bytes_acked`)."""
    return _acked_past(_tcp_info(sock, 256), offset, connected)


def _acked_past(info: Optional[bytes], offset: int, connected: bool) -> bool:
    """`acked_past` read from ``info``, a ``struct tcp_info`` (None: none)."""
    acked = _acked(info, connected)
    return acked is not None and acked > offset


def refused_unread(sock: trio.socket.SocketType, offset: int) -> bool:
    """Whether the peer of ``sock`` (a client's socket, which a listener accepted) refused the
    bytes just written past ``offset`` at once with a reset, its kernel acknowledging none of
    them: it had closed its socket, and never read them (a half-closed peer that read some and
    closed with the rest unread resets too, later, or after acknowledging them). Asked of the
    socket's state, not of its pending error, which reading would clear: the client's pump is
    then still told of the reset (a reset the client made after it took the bytes is its close,
    not a refusal)."""
    info = _tcp_info(sock, 256)
    if not info or info[0] != _TCP_CLOSE:
        return False
    return not _acked_past(info, offset, connected=False)  # the same read: there once reset


async def reset_after_close(sock: trio.socket.SocketType) -> Optional[bool]:
    """Whether the peer of ``sock``, which had closed its side, answered the bytes just sent to
    it with a reset (it is gone, not half-closed): True as soon as one is seen, False when none
    came within the probes (a few tens of milliseconds), None when ``sock`` cannot be asked."""
    for delay in _RESET_PROBES:
        if delay:
            await trio.sleep(delay)
        reset = reset_at_once(sock)
        if reset is None or reset:
            return reset
    return False
