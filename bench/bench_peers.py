"""Processes the proxy benchmark runs: a GOLEM upstream that answers from pre-encoded bytes, and
a minimal trio byte relay.

    python bench/bench_peers.py upstream PORT
    python bench/bench_peers.py relay PORT UPSTREAM_PORT

The upstream must be much faster than anything measured through it, or the benchmark sees the
upstream instead of the proxy. So it never parses the measured traffic: each connection starts
with one ``bench.workload`` request naming a workload (answered like any request), and from then
on the upstream only counts bytes. Every request of a workload has the same size, so each
``recv_into`` tells it how many requests completed, and it answers all of them with one
``sendall`` of a slice of the workload's pre-encoded responses. Ids cycle through ``ring``
distinct values, so a proxy in between pairs every request with its own response.
"""

from __future__ import annotations

import base64
import json
import socket
import struct
import sys
import threading
from dataclasses import dataclass
from functools import cache

HEADER = struct.Struct("!I")
BIG = 16 * 1024 * 1024
# Base64 text with every character of its alphabet, as a viewport capture's PNG would be.
_BASE64 = base64.b64encode(bytes(range(256)) * 3)


def frame(obj: object) -> bytes:
    """One GOLEM frame: the ``!I`` length, then compact UTF-8 JSON."""
    payload = json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()
    return HEADER.pack(len(payload)) + payload


@dataclass(frozen=True)
class Workload:
    """``ring`` requests and their responses, each side a run of equal-sized frames."""

    name: str
    ring: int
    requests: bytes
    responses: bytes

    @property
    def request_size(self) -> int:
        return len(self.requests) // self.ring

    @property
    def response_size(self) -> int:
        return len(self.responses) // self.ring


def _uniform(frames: list[bytes]) -> bytes:
    if len({len(f) for f in frames}) != 1:
        raise AssertionError("a workload's frames must all have one size")
    return b"".join(frames)


def _rtt(ring: int) -> Workload:
    # The GOLEM client's pattern: a ~200-byte call with a UUID id, a small result.
    requests, responses = [], []
    for n in range(ring):
        rid = f"550e8400-e29b-41d4-a716-{n:012d}"
        params = {"corner_x": 0.0, "corner_y": 0.0, "corner_z": 0.0, "width": 100.0,
                  "depth": 50.0, "height": 30.0}  # fmt: skip
        requests.append(frame({"id": rid, "method": "creation.create_box", "params": params}))
        result = {"guid": f"a1b2c3d4-0000-4000-8000-{n:012d}", "ok": True}
        responses.append(frame({"id": rid, "result": result, "error": None}))
    return Workload("rtt", ring, _uniform(requests), _uniform(responses))


def _tiny(ring: int) -> Workload:
    requests = [frame({"id": f"{n:08d}", "method": "ping", "params": {}}) for n in range(ring)]
    responses = [frame({"id": f"{n:08d}", "result": {}, "error": None}) for n in range(ring)]
    return Workload("tiny", ring, _uniform(requests), _uniform(responses))


def _big(ring: int) -> Workload:
    requests, responses = [], []
    for n in range(ring):
        rid = f"{n:08d}"
        requests.append(frame({"id": rid, "method": "view.capture_viewport", "params": {}}))
        head = b'{"id":"' + rid.encode() + b'","result":{"image":"'
        tail = b'"},"error":null}'
        count = BIG - len(head) - len(tail)
        payload = head + (_BASE64 * (count // len(_BASE64) + 1))[:count] + tail
        responses.append(HEADER.pack(len(payload)) + payload)
    return Workload("big", ring, _uniform(requests), _uniform(responses))


_BUILDERS = {"rtt": (_rtt, 4096), "tiny": (_tiny, 65536), "big": (_big, 2)}
WORKLOADS = tuple(_BUILDERS)


@cache
def workload(name: str) -> Workload:
    """The named workload (``rtt``, ``tiny`` or ``big``), built once per process."""
    build, ring = _BUILDERS[name]
    return build(ring)


def hello(name: str) -> tuple[bytes, bytes]:
    """The request that opens a benchmark connection, and the upstream's answer to it."""
    request = frame({"id": "hello", "method": "bench.workload", "params": {"name": name}})
    return request, frame({"id": "hello", "result": {"name": name}, "error": None})


def read_frame(sock: socket.socket) -> bytes:
    """One whole frame's payload (blocking); ConnectionError if the peer closes first."""
    header = read_exactly(sock, 4)
    return read_exactly(sock, HEADER.unpack(header)[0])


def read_exactly(sock: socket.socket, size: int) -> bytes:
    buffer = bytearray(size)
    view = memoryview(buffer)
    got = 0
    while got < size:
        n = sock.recv_into(view[got:])
        if n == 0:
            raise ConnectionError("closed")
        got += n
    return bytes(buffer)


def _serve_upstream(conn: socket.socket) -> None:
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    with conn:
        try:
            name = json.loads(read_frame(conn))["params"]["name"]
            conn.sendall(hello(name)[1])
            work = workload(name)
            size, answer, ring = work.request_size, work.response_size, work.ring
            responses = memoryview(work.responses)
            buffer = bytearray(1 << 20)
            partial = index = 0
            while n := conn.recv_into(buffer):
                complete, partial = divmod(partial + n, size)
                while complete:
                    take = min(complete, ring - index)
                    conn.sendall(responses[index * answer : (index + take) * answer])
                    index = (index + take) % ring
                    complete -= take
        except (ConnectionError, OSError, ValueError, KeyError):
            return


def upstream(port: int) -> None:
    for name in WORKLOADS:  # built before the first client, never while one is measured
        workload(name)
    server = socket.create_server(("127.0.0.1", port), backlog=128)
    while True:
        conn, _ = server.accept()
        threading.Thread(target=_serve_upstream, args=(conn,), daemon=True).start()


def relay(port: int, upstream_port: int) -> None:
    import trio

    async def pump(source: trio.SocketStream, sink: trio.SocketStream) -> None:
        try:
            while chunk := await source.receive_some(65536):
                await sink.send_all(chunk)
            await sink.send_eof()
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass

    async def handle(client: trio.SocketStream) -> None:
        async with (
            client,
            await trio.open_tcp_stream("127.0.0.1", upstream_port) as server,
            trio.open_nursery() as nursery,
        ):
            nursery.start_soon(pump, client, server)
            nursery.start_soon(pump, server, client)

    async def main() -> None:
        listeners = await trio.open_tcp_listeners(port, host="127.0.0.1")
        await trio.serve_listeners(handle, listeners)

    trio.run(main)


if __name__ == "__main__":
    if sys.argv[1] == "upstream":
        upstream(int(sys.argv[2]))
    else:
        relay(int(sys.argv[2]), int(sys.argv[3]))
