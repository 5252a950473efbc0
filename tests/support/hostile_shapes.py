"""Recordings of a given shape, written line by line (fast, for large counts)."""

from __future__ import annotations

HEADER = (
    b'{"format":"golem-proxy-recording","version":1,"profile":"golem","routes":[{"name":"main",'
    b'"listen":"127.0.0.1:19876","upstream":"127.0.0.1:9876"}],"started_at":"2026-01-01T00:00:'
    b'00.000000Z","clock":"t","tool":"golem-proxy 0.1.0","redact":[]}\n'
)


def sequential_trace(count: int) -> bytes:
    """``count`` answered ``scene.list`` calls on one connection, in the writer's layout."""
    lines = [HEADER]
    seq = 1
    for n in range(count):
        request = b'{"id":"%d","method":"scene.list","params":{}}' % n
        response = b'{"id":"%d","result":{},"error":null}' % n
        lines.append(
            b'{"seq":%d,"t":0.1,"kind":"frame","conn":1,"route":"main","dir":"c2s","n":%d,'
            b'"size":%d,"type":"request","id":"%d","method":"scene.list","msg":%s}\n'
            % (seq, n, len(request) + 4, n, request)
        )
        lines.append(
            b'{"seq":%d,"t":0.2,"kind":"frame","conn":1,"route":"main","dir":"s2c","n":%d,'
            b'"size":%d,"type":"response","id":"%d","msg":%s}\n'
            % (seq + 1, n, len(response) + 4, n, response)
        )
        lines.append(
            b'{"seq":%d,"t":0.2,"kind":"exchange","conn":1,"route":"main","req":%d,"resp":%d,'
            b'"method":"scene.list","status":"ok","latency":0.1}\n' % (seq + 2, n, n)
        )
        seq += 3
    return b"".join(lines)


def unanswered_nested(count: int, size: int) -> bytes:
    """``count`` ``scene.list`` calls on one connection, none answered, each carrying ``size``
    bytes of ``[[],[],…]`` (a parse holds ~25 times those bytes), in the writer's layout."""
    nested = b"[" + b"[]," * (size // 3) + b"[]]"
    lines = [HEADER]
    for n in range(count):
        request = b'{"id":"%d","method":"scene.list","params":{"a":%s}}' % (n, nested)
        lines.append(
            b'{"seq":%d,"t":0.1,"kind":"frame","conn":1,"route":"main","dir":"c2s","n":%d,'
            b'"size":%d,"type":"request","id":"%d","method":"scene.list","msg":%s}\n'
            % (n + 1, n, len(request) + 4, n, request)
        )
    return b"".join(lines)
