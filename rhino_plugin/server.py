"""A blocking TCP server for one channel (main 9876 or Grasshopper 9877), as the real plugin runs.

One client at a time: the accept thread serves a connection to its end before it accepts the
next one, so a second client's connect succeeds (the kernel completes it in the listen backlog)
but its requests are only read once the first client has disconnected.

Every byte goes through golem_core: `MessageReader` frames the input, the channel's ``respond``
(the behaviour's envelope around `Dispatcher`) turns a payload into a reply or into None, which
closes the connection unanswered as the real server does for a frame that is not JSON. A bad
request never stops the server:

- a header over the 64 MiB cap → the stream cannot be resynchronised: the connection is closed
  (a line goes to stderr) and the server accepts the next client;
- a frame cut short or an abrupt disconnect → the connection is dropped, the server goes on.
"""

from __future__ import annotations

import contextlib
import socket
import sys
import threading
from typing import Callable, Optional, TextIO

from golem_core.blocking import MessageReader
from golem_core.dispatcher import Dispatcher
from golem_core.errors import FrameTooLarge, TruncatedFrame

__all__ = ["ChannelServer"]

ACCEPT_POLL_SECONDS = 0.2
LISTEN_BACKLOG = 5


class ChannelServer:
    """Serves one listening socket with one dispatcher. ``after_reply`` is called after each
    answer is sent (the plugin uses it to stop once `shutdown` has been answered); ``respond``
    is the payload → reply step (None closes the connection)."""

    def __init__(
        self,
        name: str,
        host: str,
        port: int,
        dispatcher: Dispatcher,
        respond: Callable[[bytes], Optional[bytes]],
        *,
        after_reply: Optional[Callable[[], None]] = None,
        log: Optional[TextIO] = None,
    ) -> None:
        self.name = name
        self.dispatcher = dispatcher
        self._respond = respond
        self._after_reply = after_reply
        self._log = log
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._client: Optional[socket.socket] = None
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self._listener.bind((host, port))
            self._listener.listen(LISTEN_BACKLOG)
        except OSError:
            self._listener.close()
            raise
        # A timeout on accept() lets the loop notice stop() on every platform.
        self._listener.settimeout(ACCEPT_POLL_SECONDS)
        self.address: tuple[str, int] = self._listener.getsockname()[:2]
        self._thread = threading.Thread(target=self._serve, name=f"rhino-{name}", daemon=True)

    def start(self) -> None:
        """Start accepting clients on a background thread."""
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop accepting, close the current client connection and the listener, and wait up
        to ``timeout`` seconds for the accept thread."""
        self._stopping.set()
        with self._lock:
            client = self._client
        if client is not None:
            # Shutting the socket down wakes a recv() blocked in the serve thread.
            with contextlib.suppress(OSError):
                client.shutdown(socket.SHUT_RDWR)
        # On Linux this also wakes an accept() at once instead of at its next poll.
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout)
        self._listener.close()

    def _note(self, message: str) -> None:
        # Resolved per call, so a redirected sys.stderr (tests, embedding) is honoured.
        stream = self._log if self._log is not None else sys.stderr
        print(f"rhino_plugin[{self.name}]: {message}", file=stream, flush=True)

    def _serve(self) -> None:
        while not self._stopping.is_set():
            try:
                conn, peer = self._listener.accept()
            except socket.timeout:
                continue
            except OSError:
                if not self._stopping.is_set():
                    self._note("listener failed; channel stopped")
                return
            conn.settimeout(None)
            with self._lock:
                self._client = conn
            try:
                self._serve_client(conn, peer)
            except Exception as exc:  # one client's fault never stops the channel
                # As the real loop logs an unexpected error and drops that client.
                self._note(f"{peer[0]}:{peer[1]}: unexpected error ({exc!r}); connection closed")
            finally:
                with self._lock:
                    self._client = None
                conn.close()

    def _serve_client(self, conn: socket.socket, peer: tuple[str, int]) -> None:
        reader = MessageReader(conn, self.dispatcher.profile)
        while not self._stopping.is_set():
            try:
                frame = reader.read_frame()
            except FrameTooLarge as exc:
                self._note(f"closing {peer[0]}:{peer[1]}: {exc}; cannot resynchronise the stream")
                return
            except TruncatedFrame:
                self._note(f"{peer[0]}:{peer[1]} disconnected in the middle of a frame")
                return
            except OSError:
                return  # reset by the peer, or stop() shut the socket down
            if frame is None:
                return
            reply = self._respond(frame.payload)
            if reply is None:
                return
            try:
                conn.sendall(reply)
            except OSError:
                return
            if self._after_reply is not None:
                self._after_reply()
