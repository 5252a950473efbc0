"""Crafted hostile recordings: each case is a file a colleague could attach to a bug report,
built to break one assumption a reader makes (numbers are finite, text encodes, JSON is
shallow, a path is a regular file, a line's parsed size is close to its byte length)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

HEADER = (
    '{"format":"golem-proxy-recording","version":1,"profile":"golem",'
    '"routes":[{"name":"main","listen":"127.0.0.1:19876","upstream":"127.0.0.1:9876"}],'
    '"started_at":"2026-01-01T00:00:00.000000Z","clock":"t","tool":"golem-proxy 0.1.0",'
    '"redact":[]}\n'
)
OPEN = '{"seq":1,"t":0.0,"kind":"open","conn":1,"route":"main","client":"c","upstream":"u"}\n'


def frame(
    seq: int,
    direction: str,
    n: str,
    msg: str,
    *,
    conn: str = "1",
    size: str = "20",
    t: str = "0.1",
    kind: str = "request",
    extra: str = "",
) -> str:
    return (
        f'{{"seq":{seq},"t":{t},"kind":"frame","conn":{conn},"route":"main","dir":"{direction}",'
        f'"n":{n},"size":{size},"type":"{kind}"{extra},"msg":{msg}}}\n'
    )


def exchange(seq: int, req: str = "0", resp: str = "0", conn: str = "1") -> str:
    return (
        f'{{"seq":{seq},"t":0.2,"kind":"exchange","conn":{conn},"route":"main","req":{req},'
        f'"resp":{resp},"method":"m","status":"ok","latency":0.1}}\n'
    )


def call(
    method_json: str,
    *,
    conn: str = "1",
    n: str = "0",
    size: str = "20",
    req: str = "0",
    t: str = "0.1",
) -> str:
    """A request, its response and the exchange line, with one member replaced."""
    request = f'{{"id":"a","method":{method_json},"params":{{}}}}'
    response = '{"id":"a","result":{},"error":null}'
    return (
        OPEN
        + frame(
            2,
            "c2s",
            n,
            request,
            conn=conn,
            size=size,
            t=t,
            extra=f',"id":"a","method":{method_json}',
        )
        + frame(3, "s2c", "0", response, conn=conn, kind="response", extra=',"id":"a"')
        + exchange(4, req=req, conn=conn)
    )


def _deep_header() -> str:
    return HEADER[:-2] + ',"x":' + "[" * 100_000 + "]" * 100_000 + "}\n"


def _nested_line(size: int) -> bytes:
    """One event line of ``size`` bytes, almost all ``[],``: cheap on disk, ~25 times its size
    once parsed."""
    head = b'{"seq":1,"t":0,"kind":"gap","missed":1,"x":['
    count = (size - len(head) - 4) // 3
    return head + b"[]," * count + b"[]]}\n"


def _unanswered(count: int) -> str:
    lines = [OPEN]
    for n in range(count):
        msg = f'{{"id":"{n}","method":"scene.list","params":{{}}}}'
        lines.append(frame(n + 2, "c2s", str(n), msg, extra=f',"id":"{n}","method":"scene.list"'))
    close = (
        f'{{"seq":{count + 2},"t":1.0,"kind":"close","conn":1,"route":"main","reason":"eof",'
        '"bytes":{"c2s":0,"s2c":0},"abnormal":false}\n'
    )
    lines.append(close)
    return "".join(lines)


def _surrogate_written_by_the_proxy() -> str:
    # What the recorder writes for a frame whose method carries a lone surrogate: the payload
    # spliced verbatim (an escape, valid UTF-8), the prefix written with backslashreplace.
    return HEADER + call('"ping\\udc80"')


CASES: dict[str, Callable[[], str | bytes]] = {
    "conn 1e999": lambda: HEADER + call('"ping"', conn="1e999"),
    "n 1e999": lambda: HEADER + call('"ping"', n="1e999"),
    "size 1e999": lambda: HEADER + call('"ping"', size="1e999"),
    "req 1e999": lambda: HEADER + call('"ping"', req="1e999"),
    "lone surrogate": _surrogate_written_by_the_proxy,
    "method [/x]": lambda: HEADER + call('"[/x]"'),
    "deep header": _deep_header,
    "t NaN": lambda: HEADER + call('"ping"', t="NaN"),
    "declared lots": lambda: (
        HEADER
        + OPEN
        + (
            '{"seq":2,"t":0.1,"kind":"frame-error","conn":1,"route":"main","dir":"c2s",'
            '"error":"oversized","detail":"d","recoverable":false,"declared":"lots","raw":"AAAA"}\n'
        )
    ),
    "terminal escapes": lambda: HEADER + call('"\\u001b]0;pwned\\u0007\\u001b[2J"'),
}
"""Cases written as files. The others are made by `write_case`."""

SPECIAL = ("unanswered frames", "fifo x.jsonl", "95 MiB [[],…] line")


def write_case(name: str, directory: Path, *, unanswered: int = 50_000) -> Path:
    """Create the case ``name`` under ``directory`` and return its path. ``unanswered`` is
    how many requests "unanswered frames" holds (the issue's figure by default)."""
    path = directory / (name.replace(" ", "_").replace("/", "_") + ".jsonl")
    if name == "fifo x.jsonl":
        path = directory / "x.jsonl"
        os.mkfifo(path)
        return path
    if name == "95 MiB [[],…] line":
        with open(path, "wb") as stream:
            stream.write(HEADER.encode())
            stream.write(_nested_line(95 * 1024 * 1024))
        return path
    if name == "unanswered frames":
        path.write_text(HEADER + _unanswered(unanswered), encoding="utf-8")
        return path
    data = CASES[name]()
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    return path


def all_cases() -> list[str]:
    return [*CASES, *SPECIAL]
