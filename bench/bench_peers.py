"""Processes the proxy benchmark runs: a fast GOLEM upstream and a minimal trio byte relay.

    python bench/bench_peers.py upstream PORT      # answers GOLEM frames
    python bench/bench_peers.py relay PORT UPSTREAM_PORT

The upstream answers ``big`` with a payload of ``params.size`` bytes (one string of ``x``, or
of base64 text with ``params.base64``) and anything else with a
small canned response; it reads and answers in batches so it is never the bottleneck of a
pipelined run.
"""

from __future__ import annotations

import base64
import json
import socket
import struct
import sys
import threading

HEADER = struct.Struct("!I")
# Base64 text with every character of its alphabet, as a viewport capture's PNG would be.
_BASE64 = base64.b64encode(bytes(range(256)) * 3)


def _reply(request: bytes) -> bytes:
    message = json.loads(request)
    if message.get("method") == "big":
        size = int(message["params"]["size"])
        body = b'{"id": ' + json.dumps(message["id"]).encode() + b', "result": {"data": "'
        tail = b'"}, "error": null}'
        fill = _BASE64 if message["params"].get("base64") else b"x"
        count = size - len(body) - len(tail)
        payload = body + (fill * (count // len(fill) + 1))[:count] + tail
    else:
        payload = (
            b'{"id": '
            + json.dumps(message["id"]).encode()
            + b', "result": {"ok": true}, "error": null}'
        )
    return HEADER.pack(len(payload)) + payload


def _serve_upstream(conn: socket.socket) -> None:
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    buffer = bytearray()
    with conn:
        while True:
            chunk = conn.recv(262144)
            if not chunk:
                return
            buffer += chunk
            out = []
            pos = 0
            while len(buffer) - pos >= 4:
                (length,) = HEADER.unpack_from(buffer, pos)
                if len(buffer) - pos - 4 < length:
                    break
                out.append(_reply(bytes(buffer[pos + 4 : pos + 4 + length])))
                pos += 4 + length
            del buffer[:pos]
            if out:
                conn.sendall(b"".join(out))


def upstream(port: int) -> None:
    server = socket.create_server(("127.0.0.1", port))
    print("ready", flush=True)
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
        print("ready", flush=True)
        await trio.serve_listeners(handle, listeners)

    trio.run(main)


if __name__ == "__main__":
    if sys.argv[1] == "upstream":
        upstream(int(sys.argv[2]))
    else:
        relay(int(sys.argv[2]), int(sys.argv[3]))
