"""The MCP stdio hop of `golem-proxy mcp`: run the MCP server as a child and relay its stdio.

Our stdin goes to the child's stdin and the child's stdout to our stdout, byte for byte, and
the child's stderr to our stderr (recorded too, as `ProcessOutput` events; written so that a
reader that takes nothing never holds up the end: stdio_stderr.py). As in the TCP
relay, forwarding comes first: a pump reads a chunk, writes it on, and only then hands the
same bytes to the session's observer, which never makes it wait (observer.py). The observer
is the GOLEM routes' own, so the two layers are decoded in the order their bytes crossed:
what the tool-call attribution relies on (`golem_proxy.live.attribution`).

With observation in a process of its own (``--observer child-process``: the proxy has a
`link`), the pumps hand each chunk to the link instead, right after forwarding it, and no tap
is made here: the observing process decodes the hop with the GOLEM routes' chunks in the order
they were handed on (`golem_proxy.live.layer_taps`). The relay then waits, like the GOLEM
routes, while the recording trails the wire (`ObserverLink.until_caught_up`).

The hop is one connection of the session (route ``mcp`` by default): ``c2s`` is the client's
side (requests), ``s2c`` the server's (responses). It ends when the child exits: the child's
stdout and stderr are drained while the client takes bytes (`_drain`, bounded:
`stdio_ends.py`), the connection's close is recorded, and `run` returns the child's exit
status. When the child closes its stdout, so does the client's end, as it would without us.
What the client does not take of the child's output (it stopped reading, or the drain gave
up) is still read and recorded, marked undelivered as the TCP relay marks it, and not counted
as sent; so is what the child's stdin had not taken of the client's calls when the child
closed it, and what the client says after. When the client closes our stdin, the child's
stdin is closed and the child gets ``exit_timeout`` seconds to exit before it is terminated,
then killed. A signal that stops the wrapper is passed on to the child's process group, and
bounded. Every signal sent to the child is sent by `SignalStop` (stdio_ends.py), which notes
why: the close line says who killed the child, and whether it died before the client closed
stdin or after.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shlex
import signal
from collections.abc import Callable, Mapping, Sequence
from typing import Optional

import trio

from golem_core.profiles import Profile

from ..events import ConnectionClosed, ConnectionOpened, Direction, Event, ProcessOutput
from .call_feed import CallFeed
from .proxy_options import new_tap
from .relay import Proxy
from .stdio_child import (
    PipedChild,
    exit_status,
    open_piped_child,
    pipe_fd,
    read_pipe,
    read_pipe_now,
    read_pipe_rest,
)
from .stdio_ends import DRAIN_LIMIT, STOP_DRAIN, STOPPED_FIRST, HopEnds, SignalStop, say
from .stdio_inspection import hand_on, mark
from .stdio_stderr import StderrSink, relay_stderr
from .tap import ConnectionTap

__all__ = ["CLIENT_NAME", "StdioRelay"]

CLIENT_NAME = "stdio"
"""The client of the MCP hop as the recording names it: whatever is on our stdin."""


class StdioRelay:
    """Runs ``argv`` as the child and relays stdio; see the module docstring."""

    def __init__(
        self,
        argv: Sequence[str],
        env: Mapping[str, str],
        proxy: Proxy,
        profile: Profile,
        *,
        route: str = "mcp",
        watch: Optional[Callable[[Event], list[Event]]] = None,
        exit_timeout: float = 5.0,
        stdin_fd: int = 0,
        stdout_fd: int = 1,
        stderr_fd: int = 2,
        feed: Optional[CallFeed] = None,
    ) -> None:
        self.argv = list(argv)
        self.env = dict(env)
        self.proxy = proxy
        self.profile = profile
        self.route = route
        self.watch = watch
        self.exit_timeout = exit_timeout
        self._fds = (stdin_fd, stdout_fd, stderr_fd)
        self.feed = feed
        """``--call-feed``: told each tools/call before the server may read it."""
        self.process: Optional[PipedChild] = None
        self._ends = HopEnds()
        self._stop = SignalStop(self._ends, exit_timeout)
        self._sent = {Direction.C2S: 0, Direction.S2C: 0}
        self._moved_at = 0.0
        """When the client last took a byte of the child's output (or the relay last stopped
        waiting for the recording): what the drain's idle timeout counts from."""
        self._outputs_left = 2
        self._outputs_done = trio.Event()
        self._held = False
        """The relay waits for the recording (`_caught_up`)."""
        self._marked_undelivered = False
        self.conn = 0
        """The hop's connection number in the session (once `run` began)."""

    @property
    def pid(self) -> Optional[int]:
        return self.process.pid if self.process is not None else None

    @property
    def description(self) -> str:
        return shlex.join(self.argv)

    def publish(self, event: Event) -> None:
        """Publish an event of this hop (the tool-call tracker sees it first, and may mark a
        call made while a GOLEM route was down, and add the violations of the MCP layer's
        rules it settles: `ToolCallTracker.follow`)."""
        if self.watch is None:
            self.proxy.publish(event)
            return
        for followed in self.watch(event):
            self.proxy.publish(followed)

    async def start(self) -> PipedChild:
        """Start the child. Raises ChildStartError with the reason in one line."""
        self.process = self._stop.process = await open_piped_child(self.argv, self.env)
        return self.process

    def stop(self, signum: int) -> None:
        """A signal asked us to stop (the client, the user): pass it on, bounded
        (`SignalStop`)."""
        self._stop.ask(signum)

    async def run(self) -> int:
        """Relay until the child exits; returns its exit status (`exit_status`). Call `start`
        first."""
        process = self.process
        assert process is not None and process.stdin and process.stdout and process.stderr
        proxy = self.proxy
        conn = self.conn = proxy.new_connection_id()
        tap = None
        if proxy.link is None:  # else the observing process decodes the hop
            tap = new_tap(
                conn,
                self.route,
                self.profile,
                self.publish,
                proxy.options,
                proxy.redactor,
                layer=True,
            )
        self.publish(
            ConnectionOpened(
                conn=conn,
                route=self.route,
                client=CLIENT_NAME,
                upstream=self.description,
                t=proxy.now(),
            )
        )
        stdin = trio.lowlevel.FdStream(os.dup(self._fds[0]))
        stdout = trio.lowlevel.FdStream(os.dup(self._fds[1]))
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._client_to_child, tap, stdin, process)
                nursery.start_soon(self._stop.enforce, process)
                async with trio.open_nursery() as outputs:
                    outputs.start_soon(self._child_to_client, tap, process, stdout)
                    outputs.start_soon(self._child_stderr, conn, process)
                    await process.wait()
                    await self._drain(outputs.cancel_scope)
                nursery.cancel_scope.cancel()
        finally:
            with trio.CancelScope(shield=True):
                await stdin.aclose()  # restores the blocking mode the descriptor had
                await stdout.aclose()
                await process.stdin.aclose()
                if process.returncode is None:  # we are stopping first: never leave it running
                    self._stop.send(signal.SIGKILL, STOPPED_FIRST)
                    with trio.move_on_after(self.exit_timeout):
                        await process.wait()
                process.release()
            self._finish(conn, tap, process)
        return exit_status(process.returncode if process.returncode is not None else -9)

    def _observe(self, tap: Optional[ConnectionTap], direction: Direction, data: bytes) -> None:
        hand_on(self.proxy, self.conn, tap, direction, data)

    async def _caught_up(self) -> None:
        """While the recording trails the wire (observed in a process of its own), wait for
        it before taking more bytes: backpressure, as on the GOLEM routes."""
        link = self.proxy.link
        if link is not None and link.holds(self.conn):
            await link.until_caught_up(self.conn)

    async def _client_to_child(
        self, tap: Optional[ConnectionTap], stdin: trio.lowlevel.FdStream, process: PipedChild
    ) -> None:
        assert process.stdin is not None
        source = stdin.fileno()
        sink = pipe_fd(process.stdin)
        delivering = True
        try:
            while True:
                chunk = await read_pipe(source)
                if not chunk:  # (`returncode` polls: it says whether the child exited by now)
                    self._ends.client_closes(exited=process.returncode is not None)
                    break
                if delivering:
                    await self.proxy.settle_routes()  # made or written before this call: never its
                    if self.feed is not None:
                        await self.feed.client_chunk(chunk)
                    delivering = await self._write_observed(tap, sink, chunk)
                else:
                    # The child closed its stdin (or exited): what the client says from now
                    # on is still read, and recorded never delivered (`_observe_unwritten`
                    # said so); left unread, it was in no recording, and a client writing on
                    # blocked on a full pipe.
                    self._observe(tap, Direction.C2S, chunk)
                await self._caught_up()
        finally:
            self._observe(tap, Direction.C2S, b"")
        await process.stdin.aclose()
        if self._ends.client_closed:
            await self._stop.outwait(process, self.exit_timeout)

    async def _write_observed(self, tap: Optional[ConnectionTap], sink: int, chunk: bytes) -> bool:
        """Write the client's ``chunk`` to the server, observing each piece the pipe takes
        right after it takes it, before anything else runs: the server may act on a call as
        soon as it can read it, and its GOLEM frames must not be decoded before the call (the
        attribution), while a call still waiting in our hands when the server goes away was
        never delivered, and is observed so. Returns False when the server's stdin is gone
        (what it did not take is observed undelivered, as the TCP relay's `forward_rest`
        does)."""
        done = 0
        try:
            while done < len(chunk):
                try:
                    written = os.write(sink, memoryview(chunk)[done:])
                except BlockingIOError:
                    await trio.lowlevel.wait_writable(sink)
                    continue
                self._sent[Direction.C2S] += written
                self._observe(tap, Direction.C2S, chunk[done : done + written])
                done += written
        except OSError:  # the server closed its stdin
            self._observe_unwritten(tap, chunk[done:])
            return False
        except trio.Cancelled:  # the server exited while the rest waited
            self._observe_unwritten(tap, chunk[done:])
            raise
        return True

    def _observe_unwritten(self, tap: Optional[ConnectionTap], rest: bytes) -> None:
        """The client's ``rest`` never reached the server: recorded, marked undelivered."""
        self._mark(tap, Direction.C2S, "server gone")
        self._observe(tap, Direction.C2S, rest)

    async def _drain(self, outputs: trio.CancelScope) -> None:
        """The child is gone: what it wrote is still in its pipes, and what was read of it may
        still be on its way to the client. Both go on while the client takes bytes (or the
        relay waits for the recording), and are given up once it took nothing for
        `DRAIN_TIMEOUT` (a client may stop reading, a grandchild may hold the pipes open;
        `STOP_DRAIN` once a signal stopped us), or `DRAIN_LIMIT` after the exit whatever
        moves (a grandchild may write for ever): what the client did not take is recorded
        undelivered, and said."""
        exited = self._moved_at = trio.current_time()
        while self._outputs_left:
            now = trio.current_time()
            idle_end = (now if self._held else self._moved_at) + self._stop.drain_idle
            deadline = min(idle_end, exited + DRAIN_LIMIT)
            if now >= deadline:
                self._ends.give_up(past_limit=deadline < idle_end)
                outputs.cancel()
                return
            # Woken at least every STOP_DRAIN: a signal that comes meanwhile shortens it.
            with trio.move_on_at(min(deadline, now + STOP_DRAIN)):
                await self._outputs_done.wait()

    def _output_done(self) -> None:
        self._outputs_left -= 1
        if not self._outputs_left:
            self._outputs_done.set()

    async def _child_to_client(
        self, tap: Optional[ConnectionTap], process: PipedChild, stdout: trio.lowlevel.FdStream
    ) -> None:
        assert process.stdout is not None
        source = pipe_fd(process.stdout)
        sink = stdout.fileno()
        ended = False  # the end of the server's output was read
        try:
            while True:
                chunk = await read_pipe(source)
                if not chunk:
                    self._ends.output_ended = ended = True
                    break
                # A GOLEM connection the server made, and a GOLEM request it wrote, before
                # writing this are handed on first, or a call it answers would end before them.
                await self.proxy.settle_routes()
                if self.feed is not None:
                    await self.feed.server_chunk(chunk)
                await self._deliver(tap, sink, chunk)
                self._held = True  # waiting for the recording: not the client's idleness
                try:
                    await self._caught_up()
                finally:
                    self._held = False
                    self._moved_at = trio.current_time()
            # The server closed its stdout: so does the client's end, as without us (the
            # server may run on; its client would see the end now).
            await stdout.aclose()
            with contextlib.suppress(OSError):
                null = os.open(os.devnull, os.O_WRONLY)
                os.dup2(null, self._fds[1])
                os.close(null)
            if self._ends.signalled:  # its death, at hand, may be golem-proxy's doing
                await process.wait()
        finally:
            if self._ends.given_up:  # what the pipe still holds never reaches the client
                rest, ended = read_pipe_rest(source)
                self._deliver_none(tap, rest)
            # A line cut by a signal golem-proxy sent, or by its giving the pipe up, is no
            # truncation of the server's.
            how = self._ends.output_cut(process.returncode, ended)
            if how:
                self._mark(tap, Direction.S2C, how, cut=True)
            self._observe(tap, Direction.S2C, b"")
            self._output_done()

    async def _deliver(self, tap: Optional[ConnectionTap], sink: int, chunk: bytes) -> None:
        """Write the server's ``chunk`` to the client, then observe it: what the client did
        not take (it stopped reading, or the drain gave up on it) is observed undelivered."""
        view = memoryview(chunk)
        taken = 0
        try:
            while taken < len(chunk) and not self._ends.client_gone:
                try:
                    taken += os.write(sink, view[taken:])
                except BlockingIOError:
                    await trio.lowlevel.wait_writable(sink)
                    continue
                except OSError as exc:
                    # Keep draining the child, or it would block on a full pipe.
                    self._ends.client_gone = True
                    say(
                        f"the client stopped reading ({exc.strerror or exc}); "
                        "its output is still drained and recorded"
                    )
                    break
                self._moved_at = trio.current_time()
        finally:  # also when the drain gave up while the client took nothing
            self._sent[Direction.S2C] += taken
            if taken:  # (no bytes would be the end of the direction)
                self._observe(tap, Direction.S2C, chunk[:taken])
            self._deliver_none(tap, chunk[taken:])

    def _deliver_none(self, tap: Optional[ConnectionTap], data: bytes) -> None:
        """Observe ``data``, the server's, as never delivered to the client (marked once:
        everything after it is not delivered either)."""
        if not data:
            return
        self._ends.undelivered += len(data)
        if not self._marked_undelivered:
            self._marked_undelivered = True
            why = self._ends.undelivered_why()
            self._mark(tap, Direction.S2C, why)
        self._observe(tap, Direction.S2C, data)

    def _mark(
        self, tap: Optional[ConnectionTap], direction: Direction, why: str, cut: bool = False
    ) -> None:
        mark(self.proxy, self.conn, tap, direction, why, cut)

    async def _child_stderr(self, conn: int, process: PipedChild) -> None:
        assert process.stderr is not None
        source = pipe_fd(process.stderr)
        sink = StderrSink(self._fds[2])
        try:
            await relay_stderr(source, sink, functools.partial(self._publish_stderr, conn))
        finally:
            if self._ends.given_up:  # what the pipe still holds is recorded, never written
                rest = read_pipe_now(source)
                if rest:
                    self._publish_stderr(conn, rest)
                    sink.lost(len(rest))
            self._ends.stderr_unwritten = sink.unwritten
            self._output_done()

    def _publish_stderr(self, conn: int, chunk: bytes) -> None:
        # Recorded in order with the hop's frames (after what was forwarded before it).
        output = ProcessOutput(conn=conn, route=self.route, t=self.proxy.now(), data=chunk)
        self._publish_in_order(output)

    def _publish_in_order(self, event: Event) -> None:
        """Publish ``event`` after what was forwarded before it is decoded (the link and the
        observing process keep that order themselves)."""
        proxy = self.proxy
        if proxy.link is not None or proxy.options.enforce_limits:
            self.publish(event)
        else:
            proxy.observer.submit_event(self.publish, event)

    def _finish(self, conn: int, tap: Optional[ConnectionTap], process: PipedChild) -> None:
        returncode = process.returncode
        reason, abnormal = self._ends.close_reason(returncode)
        closed = ConnectionClosed(
            conn=conn,
            route=self.route,
            reason=reason,
            t=self.proxy.now(),
            bytes_c2s=self._sent[Direction.C2S],
            bytes_s2c=self._sent[Direction.S2C],
            abnormal=abnormal,
        )
        self._publish_in_order(closed)
        if tap is not None and not self.proxy.options.enforce_limits:
            self.proxy.observer.forget(tap)
