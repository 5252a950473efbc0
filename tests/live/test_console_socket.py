"""The intercept console on a Unix socket (`serve_console`): real sockets, the real engine;
what a client sends is input like a frame."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from golem_core.profiles import GOLEM
from golem_proxy.live.console_socket import serve_console
from golem_proxy.live.intercept import InterceptEngine
from golem_proxy.live.intercept_console import InterceptConsole
from golem_proxy.net.addresses import Address
from golem_proxy.net.listeners import connect, open_listener

pytestmark = pytest.mark.trio

LIMIT = 1000


async def receive_lines(stream: trio.SocketStream, count: int) -> list[str]:
    data = b""
    with trio.fail_after(10):
        while data.count(b"\n") < count:
            chunk = await stream.receive_some(65536)
            assert chunk, data
            data += chunk
    return data.decode().splitlines()


async def test_each_line_is_a_command_answered_in_plain_text(tmp_path: Path) -> None:
    tmp_path.chmod(0o700)
    address = Address(path=str(tmp_path / "c.sock"))
    listener = await open_listener(address)
    console = InterceptConsole(InterceptEngine(GOLEM), editor=[])
    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve_console, listener, console, LIMIT)
        first, second = await connect(address), await connect(address)
        await first.send_all(b"list\n\xff\xfe\naccept 7\nfilter ~m ping\n")
        assert await receive_lines(first, 4) == [
            "intercept filter: off; 0 held",
            "not UTF-8 (byte 0): the line was ignored",
            "no frame #7 is held",
            "intercept filter: ~m ping",
        ]
        # The second client's `list` is sent only once the filter is set: the two clients are
        # served concurrently, so their order is not otherwise defined.
        # An overlong line, in pieces, is refused without being kept; the next one is served.
        await second.send_all(b"x" * (LIMIT + 1))
        await second.send_all(b"y" * 3 * LIMIT + b"\nlist")
        await second.send_eof()
        answered = await receive_lines(second, 2)
        assert answered == [
            f"line too long ({4 * LIMIT + 1} bytes, at most {LIMIT}): ignored",
            "intercept filter: ~m ping; 0 held",
        ]
        assert await second.receive_some(10) == b""  # the run closes once the client is done
        await first.aclose()
        await second.aclose()
        nursery.cancel_scope.cancel()
    await listener.aclose()
    assert not (tmp_path / "c.sock").exists()
