"""A client that behaves like the reference Scrybe client (scrybe-rpc/src/client.rs): one
connection per request, request id 1, 5 s connect/read/write timeouts, a 16 MiB reply cap
(newline included), and the reply validated in the contract's order into a typed outcome.

The validation is written here from the contract text, not borrowed from golem_core, so that
the tests cross-check the profile against an independent reading. Outcome names use the
profile's spelling (``MismatchedResponseId { expected: 1, actual: 42 }``,
``Remote(RpcError { code: -32001 })``) so the two can be compared as strings.
"""

from __future__ import annotations

import errno
import json
import socket
from dataclasses import dataclass, field
from typing import Any, Optional

MAX_FRAME_BYTES = 16 * 1024 * 1024
TIMEOUT = 5.0
REQUEST_ID = 1


@dataclass(frozen=True)
class Outcome:
    """What one call came to: ``name`` is the typed outcome; ``raw`` the reply bytes read."""

    name: str
    result: Any = None
    error: Optional[dict[str, Any]] = None
    raw: bytes = b""
    sent: bytes = field(default=b"", repr=False)

    @property
    def ok(self) -> bool:
        return self.name == "Ok"


def request_line(method: str, params: Optional[dict[str, Any]] = None) -> bytes:
    obj: dict[str, Any] = {"jsonrpc": "2.0", "id": REQUEST_ID, "method": method}
    if params is not None:
        obj["params"] = params
    return json.dumps(obj, separators=(",", ":")).encode() + b"\n"


def call(path: str, method: str, params: Optional[dict[str, Any]] = None) -> Outcome:
    """One request on a fresh connection to the socket at ``path``; never raises."""
    return call_raw(path, request_line(method, params))


def call_raw(path: str, line: bytes) -> Outcome:
    """Send ``line`` as the request and type the reply (blocking; for trio, use a thread)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(TIMEOUT)
    try:
        try:
            sock.connect(path)
        except FileNotFoundError:
            return Outcome("SocketUnavailable { kind: NotFound }", sent=line)
        except ConnectionRefusedError:
            return Outcome("SocketUnavailable { kind: ConnectionRefused }", sent=line)
        try:
            sock.sendall(line)
        except socket.timeout:
            return Outcome("WriteTimeout", sent=line)
        reply, problem = _read_line(sock)
    finally:
        sock.close()
    if problem is not None:
        return Outcome(problem, raw=reply, sent=line)
    return _validate(reply, sent=line)


def _read_line(sock: socket.socket) -> tuple[bytes, Optional[str]]:
    """Read up to and including the first newline, stopping at the cap (never allocating
    past it). Returns the bytes read and a failure outcome, or None."""
    data = bytearray()
    while True:
        try:
            chunk = sock.recv(min(65536, MAX_FRAME_BYTES - len(data)))
        except socket.timeout:
            return bytes(data), "ReadTimeout"
        except OSError as exc:
            if exc.errno == errno.ECONNRESET:
                return bytes(data), "Io(ConnectionReset)"
            return bytes(data), f"Io({exc})"
        if not chunk:
            return bytes(data), "Io(UnexpectedEof)"
        newline = chunk.find(b"\n")
        if newline >= 0:
            data += chunk[: newline + 1]
            return bytes(data), None
        data += chunk
        if len(data) >= MAX_FRAME_BYTES:
            return bytes(data), "FrameTooLarge"


def _validate(reply: bytes, sent: bytes) -> Outcome:
    """The contract's seven envelope rules, in their order."""
    body = reply[:-1]
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return Outcome("InvalidUtf8", raw=reply, sent=sent)
    try:
        obj = json.loads(text)
    except ValueError:
        return Outcome("InvalidJson", raw=reply, sent=sent)
    if not isinstance(obj, dict) or obj.get("jsonrpc") != "2.0":
        return Outcome("InvalidEnvelope(WrongVersion)", raw=reply, sent=sent)
    ident = obj.get("id")
    if not isinstance(ident, int) or isinstance(ident, bool) or ident < 0:
        return Outcome("InvalidEnvelope(MissingId)", raw=reply, sent=sent)
    if ident != REQUEST_ID:
        name = f"MismatchedResponseId {{ expected: {REQUEST_ID}, actual: {ident} }}"
        return Outcome(name, raw=reply, sent=sent)
    # serde's Option: an explicit null is the same as a missing member.
    result, error = obj.get("result"), obj.get("error")
    if result is not None and error is not None:
        return Outcome("InvalidEnvelope(BothResultAndError)", raw=reply, sent=sent)
    if result is None and error is None:
        return Outcome("InvalidEnvelope(NeitherResultNorError)", raw=reply, sent=sent)
    if error is None:
        return Outcome("Ok", result=result, raw=reply, sent=sent)
    code = error.get("code") if isinstance(error, dict) else None
    if (
        not isinstance(error, dict)
        or not isinstance(code, int)
        or isinstance(code, bool)
        or not isinstance(error.get("message"), str)
    ):
        return Outcome("InvalidEnvelope(InvalidErrorObject)", raw=reply, sent=sent)
    return Outcome(f"Remote(RpcError {{ code: {code} }})", error=error, raw=reply, sent=sent)


def read_all(path: str, line: bytes, limit: int = 64 * 1024 * 1024) -> bytes:
    """Send ``line`` and return every byte the server sends until it closes (for byte
    comparisons; not what the reference client does)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(TIMEOUT)
    data = bytearray()
    try:
        sock.connect(path)
        sock.sendall(line)
        while len(data) < limit:
            chunk = sock.recv(1 << 20)
            if not chunk:
                break
            data += chunk
    finally:
        sock.close()
    return bytes(data)
