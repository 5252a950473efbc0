"""One proxied connection: a client, its upstream, and everything both pumps share.

It owns how a direction ends (end of stream, half-close, reset, a side that went away), why
the connection ended, how each socket is closed (a clean FIN, or a reset where the peer would
have seen one without the proxy), and the one way forwarded bytes reach the observer (in this
process, or through the handoff to an observing process of its own: hand_on.py). The plain pumps
(`relay`) and the faulted pumps (`fault_relay`) both use it.

Transparency rules, so that a client sees through the proxy what it would see directly:

* the upstream resets → the client is reset; the client resets → the upstream is reset;
* a write to a side fails (it went away) → the other side is reset;
* the upstream closes while the client waits for an answer → the client gets a FIN at once;
* bytes read from one side that could not be written to the other (its write failed: it reset
  or went away; or the connection ended while they waited for room) are still handed to
  inspection, marked undelivered (`observe_undelivered`), so the recording never shows an
  answer as received by a client that never got it. A write the kernel accepted is delivered
  as far as the proxy can know, also when the peer had closed and resets on receiving it,
  but for one case that is known: bytes of the client written after the upstream's FIN was
  seen, which the upstream answers with a reset, never reached the plugin (it had closed its
  socket, not only its sending side), so they are handed on undelivered ("upstream gone");
  bytes written before its FIN or reset was seen may have been read, and count as delivered;
  likewise an answer refused at once, unread (a client that gave up waiting and closed, its
  FIN read by the proxy yet or not), is "client gone";
* the upstream closes while the connection is idle (a plugin restarting between calls: every
  request answered, idle_fin.py), on a protocol whose clients read nothing between calls
  (GOLEM) → the FIN is held until the client acts: if it sends, the bytes are forwarded, and
  when the upstream answers them with a reset (it had fully closed), the client is reset, the
  error a client reconnects on (directly, that call would see the end of stream and only the
  next one the reset: through the proxy the client loses one failed call less, never one
  more), and those bytes are recorded undelivered. If the upstream does not reset (it only
  half-closed), the FIN follows.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from typing import Optional, Union

import trio

from golem_core.framing import Frame

from ..events import ConnectionClosed, Direction
from ..net.addresses import Route
from ..net.listeners import close_abortively
from .chunks import ChunkReader
from .hand_on import HandsToInspection
from .idle_fin import hold_while_idle
from .observer import Observer
from .observer_link import ObserverLink
from .peer_state import acked_past, refused_unread, reset_after_close, reset_at_once
from .tap import ConnectionTap

__all__ = ["Connection", "other"]


def other(direction: Direction) -> Direction:
    return Direction.S2C if direction is Direction.C2S else Direction.C2S


@dataclass
class Connection(HandsToInspection):
    conn: int
    route: Route
    client: trio.SocketStream
    upstream: Optional[trio.SocketStream] = None
    tap: Optional[ConnectionTap] = None
    observer: Optional[Observer] = None
    inline: bool = False
    """Decode on the forwarding path (``--enforce-limits``) instead of through the observer."""
    judge: Optional[ConnectionTap] = None
    """``--enforce-limits``: the tap that checks bytes before they are forwarded
    (`enforce_limits.stopped_by_limits`) and publishes nothing (`limit_check_tap`); what was
    forwarded is then recorded as on any route, after the write (`observe`)."""
    link: Optional[ObserverLink] = None
    """Hand forwarded bytes to the observing process instead (``--observer child-process``)."""
    sent: dict[Direction, int] = field(default_factory=lambda: {Direction.C2S: 0, Direction.S2C: 0})
    eof: dict[Direction, bool] = field(
        default_factory=lambda: {Direction.C2S: False, Direction.S2C: False}
    )
    client_reader: Optional[ChunkReader] = None
    """What its pump reads the client's bytes with (read_up.py: how far it read)."""
    decided_at_read: bool = False
    """Its pump marks the client's frames as they are read (`arrived`), before it holds or
    forwards them (fault_relay.py): the session's decision about them is taken at the read."""
    marked_through: int = 0
    """With `decided_at_read`: how far into the client's stream (`ChunkReader.taken`) its
    frames were marked as they arrived."""
    reason: str = ""
    abnormal: bool = False
    last_activity: float = 0.0
    holding: int = 0
    """Frames of this connection the proxy itself holds now (``--intercept`` waiting for a
    decision, ``--fault delay``): the connection is not idle meanwhile (`idle_watch`)."""
    reset: set[str] = field(default_factory=set)
    """Sides ("client", "upstream") to close with a reset rather than a clean FIN."""
    awaiting_reply: bool = False
    """The client's bytes crossed last (set per chunk, at no cost): a request waits. Cleared
    by any bytes of the upstream's, one answer of several, or part of one: then whether one
    waits is asked when it matters (`idle_fin.hold_while_idle`)."""
    fin_held: bool = False
    """The upstream closed while idle; the client's FIN waits for the client to act."""
    hold_idle_fin: bool = False
    """Whether an idle connection's FIN may wait for the client (the profile's clients never
    read past an answer: GOLEM)."""
    gone_before_write: bool = False
    """The upstream closed while idle (its close held from the client) and refused the
    client's next bytes with a reset (`after_upstream_closed`;
    `ConnectionClosed.gone_before_write`)."""
    gone: set[str] = field(default_factory=set)
    """Sides ("client", "upstream") known to be gone: reading from one failed (a reset), or
    writing to one did. A clean FIN is no part of it: the side may still read."""
    cut_marked: set[Direction] = field(default_factory=set)
    """Directions whose end the proxy made was said (`mark_cut`): ``--fault truncate``'s, or
    `ended_by_proxy`'s; the first to say it is the one that did it."""
    added: list[str] = field(default_factory=list)
    """What the close says after its reason (`add_to_reason`)."""

    def note(self, reason: str, abnormal: bool = False) -> None:
        if not self.reason:  # the first cause is the one worth reporting
            self.reason = reason
            self.abnormal = abnormal

    def add_to_reason(self, more: str) -> None:
        """Add ``more`` to the close's reason, whichever cause came first (something its
        reader must know, e.g. bytes read and never sent), or comes later: said after it."""
        self.added.append(more)

    def sides(self, direction: Direction) -> tuple[trio.SocketStream, trio.SocketStream, str, str]:
        """(source, sink, source name, sink name) for ``direction``."""
        assert self.upstream is not None
        if direction is Direction.C2S:
            return self.client, self.upstream, "client", "upstream"
        return self.upstream, self.client, "upstream", "client"

    def _undelivered_why(self, direction: Direction) -> str:
        """ "client gone" when ``direction``'s receiver reset or a write to it failed, else
        "connection ended"."""
        _, _, _, sink_name = self.sides(direction)
        return f"{sink_name} gone" if sink_name in self.gone else "connection ended"

    async def forward(
        self,
        direction: Direction,
        data: bytes,
        t: float,
        scope: trio.CancelScope,
        *,
        frame: Optional[Frame] = None,
    ) -> bool:
        """Write ``data`` to ``direction``'s receiver and hand it to inspection (``frame``: it
        is that frame), counting it in `sent`. False when the receiver went away (the
        connection ends): see `forward_rest`; or when the client's bytes went to an upstream
        that had closed and refused them (`after_upstream_closed`).

        To a spool, ``data`` is handed on before the write (`ObserverLink.hands_on_first`):
        a ``kill -9`` between the two then leaves in the spool bytes that may not have gone,
        never bytes a receiver has and the spool has not; what then did not go is said after
        them (`not_delivered`)."""
        first = self.link is not None and self.link.hands_on_first(self.conn)
        if first:
            self.observe(direction, data, t, frame)
        fd = self.sides(direction)[1].socket.fileno()
        try:
            written = os.write(fd, data)
        except BlockingIOError:
            written = 0
        except OSError as exc:
            self.sink_failed(direction, exc, scope)  # first: it says which side is gone
            self.not_delivered(direction, data, t, first)
            return False
        whole = written == len(data)
        if whole:
            self.sent[direction] += written
        elif not await self.forward_rest(direction, data, written, t, scope, first):
            return False
        if direction is Direction.C2S and self.eof[Direction.S2C]:
            # Written whole, with no wait: the upstream's FIN had been seen before the write.
            return await self.after_upstream_closed(
                data, t, scope, not whole, frame, first and whole
            )
        if whole and direction is Direction.S2C and self._refused_unread(direction, data):
            # An answer to a client that had closed: one that gave up waiting (its timeout)
            # and closed its socket refused it at once, unread. Asked whether or not its FIN
            # was read yet: the answer and the FIN come in together, and the answer's pump
            # may run first (then the reset is all the client's pump ever reads).
            self.sink_failed(direction, ConnectionResetError("reset"), scope)
            self.not_delivered(direction, data, t, first, "client gone")
            return False
        if whole and not first:
            self.observe(direction, data, t, frame)
        return True

    def not_delivered(
        self,
        direction: Direction,
        data: Union[bytes, memoryview],
        t: float,
        handed: bool,
        why: Optional[str] = None,
    ) -> None:
        """``data``, the last bytes read for ``direction``'s receiver, never reached it: handed
        on marked so (`observe_undelivered`), or, when they were ``handed`` on before their
        write (a spool's), said after them (`ObserverLink.undelivered_last`)."""
        if handed:
            self.undelivered_last(direction, len(data), t, why)
        else:
            self.observe_undelivered(direction, bytes(data), t, why)

    def undelivered_last(
        self, direction: Direction, size: int, t: float, why: Optional[str] = None
    ) -> None:
        """Of the bytes of ``direction`` handed on before their write, the last ``size`` never
        reached the receiver (``why``; by default as `observe_undelivered` says it)."""
        if self.link is not None and size > 0:
            why = why or self._undelivered_why(direction)
            self.link.undelivered_last(self.conn, direction, size, why, t)

    def _refused_unread(self, direction: Direction, data: bytes) -> bool:
        """Whether ``direction``'s receiver, which had sent its FIN, refused ``data`` (just
        written whole) at once, unread (`peer_state.refused_unread`)."""
        sink = self.sides(direction)[1].socket
        return refused_unread(sink, self.sent[direction] - len(data))

    async def forward_rest(
        self,
        direction: Direction,
        data: bytes,
        written: int,
        t: float,
        scope: trio.CancelScope,
        handed: bool = False,
    ) -> bool:
        """The first ``written`` bytes of ``data`` went to ``direction``'s receiver (not yet
        counted nor observed): write the rest as it makes room. Each piece the kernel takes
        is counted and handed to inspection at once, before anything else runs, so an answer
        to it is never observed ahead of it (unless all of ``data`` was ``handed`` on before
        its write: `forward`); what cannot be written (the receiver went away, or the
        connection ended meanwhile) is handed on undelivered (`not_delivered`).
        False when the receiver went away (`sink_failed`: the connection ends). Raises
        trio.Cancelled when the connection ends while it waits."""
        fd = self.sides(direction)[1].socket.fileno()
        done = 0
        try:
            while True:
                if written:
                    self.sent[direction] += written
                    if not handed:
                        self.observe(direction, data[done : done + written], t)
                    done += written
                if done == len(data):
                    return True
                try:
                    written = os.write(fd, memoryview(data)[done:])
                except BlockingIOError:
                    written = 0
                    await trio.lowlevel.wait_writable(fd)
        except OSError as exc:
            self.sink_failed(direction, exc, scope)
            self.not_delivered(direction, memoryview(data)[done:], t, handed)
            return False
        except trio.Cancelled:
            self.not_delivered(direction, memoryview(data)[done:], t, handed)
            raise

    def source_failed(self, direction: Direction, exc: OSError, scope: trio.CancelScope) -> None:
        """Reading ``direction``'s source failed (a reset): reset the other side too."""
        _, _, source_name, sink_name = self.sides(direction)
        self.gone.add(source_name)
        self.note(f"{source_name} reset the connection ({exc.strerror or exc})", True)
        self.reset.add(sink_name)
        scope.cancel()

    def sink_failed(self, direction: Direction, exc: OSError, scope: trio.CancelScope) -> None:
        """Writing to ``direction``'s sink failed (it went away): reset the source."""
        _, _, source_name, sink_name = self.sides(direction)
        self.gone.add(sink_name)
        self.note(f"{sink_name} went away ({exc.strerror or exc})", True)
        self.reset.add(source_name)
        scope.cancel()

    def end_of_stream(self, direction: Direction, t: float, scope: trio.CancelScope) -> None:
        """``direction``'s source closed cleanly: pass the half-close on, and end the
        connection once both directions ended."""
        _, sink, source_name, _ = self.sides(direction)
        self.eof[direction] = True
        self.observe(direction, b"", t)
        if not self.reason and not self.eof[other(direction)]:
            self.note(f"{source_name} closed")
        if self.eof[other(direction)]:
            self.release_fin()
            scope.cancel()
            return
        if (
            direction is Direction.S2C
            and self.hold_idle_fin
            and not self.awaiting_reply
            and hold_while_idle(self)
        ):
            self.fin_held = True
            return
        with contextlib.suppress(OSError):
            sink.socket.shutdown(trio.socket.SHUT_WR)

    def release_fin(self) -> None:
        """Pass on the upstream's held FIN to the client."""
        if self.fin_held:
            self.fin_held = False
            with contextlib.suppress(OSError):
                self.client.socket.shutdown(trio.socket.SHUT_WR)

    async def after_upstream_closed(
        self,
        data: bytes,
        t: float,
        scope: trio.CancelScope,
        observed: bool,
        frame: Optional[Frame] = None,
        handed: bool = False,
    ) -> bool:
        """The client's ``data`` went to an upstream that had closed its side. If it answers
        them with a reset (it is gone, not half-closed), reset the client, which would
        otherwise wait on a connection nobody serves, and end the connection (``scope``):
        False. Unless ``observed`` (written in pieces, each handed on as it went: delivered
        as far as the proxy can know), ``data`` was written whole after the upstream's FIN
        was seen, and is handed to inspection now: undelivered ("upstream gone") when
        refused at once, as the upstream's application never read it (it had closed its
        socket), else as delivered (a half-closed upstream may still read, and one that reads
        some and closes with the rest unread resets later: what it read is not known).
        ``handed``: ``data`` was handed on before its write (`forward`), and is only said
        undelivered after it when refused."""
        observed = observed or handed
        assert self.upstream is not None
        # Asked before anything else runs: the write just returned (`reset_at_once`).
        refused = reset_at_once(self.upstream.socket)
        try:
            reset = True if refused else await reset_after_close(self.upstream.socket)
        except trio.Cancelled:
            if not observed:
                self.observe(Direction.C2S, data, t, frame)  # nothing known against it
            raise
        if not reset:
            if not observed:
                self.observe(Direction.C2S, data, t, frame)
            if reset is not None:
                self.release_fin()  # the upstream only half-closed
            return True
        offset = self.sent[Direction.C2S] - len(data)
        if (
            (not observed or handed)
            and refused
            and not acked_past(self.upstream.socket, offset, connected=True)
        ):
            # Refused at once, none of it acknowledged: the plugin had closed its socket.
            # One that half-closed, read some and closed with the rest unread resets too.
            self.gone.add("upstream")
            self.not_delivered(Direction.C2S, data, t, handed, "upstream gone")
        elif not observed:
            self.observe(Direction.C2S, data, t, frame)  # it may have read them, then closed
        # This, not the earlier clean close, is what the connection ended with.
        self.reason = "upstream closed; the client's next bytes were refused (reset)"
        self.abnormal = True
        # Dead at the client's write only if the client was never told of the close (held
        # while idle); otherwise it wrote after an end it had been given.
        self.gone_before_write = self.fin_held
        self._reset_client()
        scope.cancel()
        return False

    def _reset_client(self) -> None:
        """Reset the client at once: a FIN first would race the reset, and a client woken by
        the FIN and sending again before the reset lands fails one more call."""
        self.fin_held = False
        self.reset.add("client")
        close_abortively(self.client)

    def ended_by_proxy(self, direction: Direction, stopped: bool = False) -> str:
        """How the proxy itself ended ``direction``'s stream, which its source neither ended
        nor reset: it reset that source because the other side reset (``the client's reset``:
        a write to it failed, or reading it did), or of its own accord (``the proxy's reset of
        the client``), or stopped reading it (``the proxy's stop``, when its stop cancelled
        the pumps (``stopped``), its drain timeout past or a cut, whatever ended the other
        side before; ``the proxy's close``, for a reason the close says: ``--idle-timeout``);
        "" when the source ended it, or its cut was said already (``--fault truncate``). A
        frame of it cut there is then no framing error of its sender's (`ConnectionTap.cut`)."""
        _, _, source_name, sink_name = self.sides(direction)
        if self.eof[direction] or source_name in self.gone or direction in self.cut_marked:
            return ""
        if source_name in self.reset:
            if sink_name in self.gone:
                return f"the {sink_name}'s reset"
            return f"the proxy's reset of the {source_name}"
        return "the proxy's stop" if stopped or not self.reason else "the proxy's close"

    def close_sockets(self) -> None:
        """Close both sides: with a reset where `reset` says so, else cleanly."""
        for name, stream in (("client", self.client), ("upstream", self.upstream)):
            if stream is None or stream.socket.fileno() == -1:
                continue
            if name in self.reset:
                close_abortively(stream)
            else:
                stream.socket.close()

    def closed_event(self, t: float) -> ConnectionClosed:
        if not self.reason:
            self.note("proxy shutting down", True)
        reason = "; ".join((self.reason, *self.added))
        # A side that reset us (gone), or one we reset: the way that reset went.
        crossed = {
            Direction.S2C: "client" in self.reset or "upstream" in self.gone,
            Direction.C2S: "upstream" in self.reset or "client" in self.gone,
        }
        return ConnectionClosed(
            conn=self.conn,
            route=self.route.name,
            reason=reason,
            t=t,
            bytes_c2s=self.sent[Direction.C2S],
            bytes_s2c=self.sent[Direction.S2C],
            abnormal=self.abnormal,
            gone_before_write=self.gone_before_write,
            resets=tuple(direction for direction, reset in crossed.items() if reset),
        )
