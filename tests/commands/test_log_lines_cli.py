"""The live log of ``golem-proxy proxy`` as a user reads it: a status is shown whole and the
columns after it stay in line; the lines come in the order of their times (a connection
accepted after an answer went by is logged after that exchange), whichever process observes."""

from __future__ import annotations

import datetime
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from golem_proxy.testing.client import GolemClient
from golem_proxy.testing.plugin_process import PluginProcess
from tests.commands.test_log_cli import ProxyProcess, start
from tests.support.plugin_fixture import plugin_fixture

plugin = plugin_fixture(seed=11)

EXCHANGE_LINE = re.compile(
    r"^\S+ main  #\d+\s+(?P<method>\S+)\s+(?P<status>.+?)\s+\d[\d.]* (?:µs|ms|s)"
    r"(?P<sizes>  \d+ B →)"
)
LINE = re.compile(r"^(?P<clock>\d\d:\d\d:\d\d\.\d{3}) main  #(?P<conn>\d+)\s+(?P<what>\S+)")


@pytest.fixture
def started() -> Iterator[list[ProxyProcess]]:
    running: list[ProxyProcess] = []
    yield running
    for proxy in running:
        proxy.kill()


def test_a_long_status_is_shown_whole_and_what_follows_stays_aligned(
    plugin: PluginProcess, tmp_path: Path, started: list[ProxyProcess]
) -> None:
    proxy = start(started, tmp_path, plugin.main)
    with GolemClient("127.0.0.1", proxy.port, timeout=20) as client:
        client.send_command("ping", timeout=20)
        # The plugin's wrapped handler returns its error dict as the result.
        missing = "00000000-0000-4000-8000-000000000000"
        failed = client.send_command("operations.boolean_union", {"guids": [missing, missing]})
        assert failed["code"] == "OBJECT_NOT_FOUND"
        client.send_command("ping", timeout=20)
    proxy.read_until(re.compile(rb"operations\.boolean_union[^\n]*\n[^\n]*ping[^\n]*\n"))
    assert proxy.stop() == 0
    lines = [EXCHANGE_LINE.match(line) for line in proxy.out.decode().splitlines()]
    exchanges = [found for found in lines if found is not None]
    # The client pings as it connects, then the three calls.
    assert [found["method"] for found in exchanges][-3:] == [
        "ping",
        "operations.boolean_union",
        "ping",
    ]
    failed_line, next_line = exchanges[-2:]
    assert failed_line["status"] == "OBJECT_NOT_FOUND (in result)"  # every word of it
    # The column widened for it: the latency and sizes of its line and the next line up.
    assert failed_line.start("sizes") == next_line.start("sizes")


@pytest.mark.parametrize("observer", ["child-process", "in-process"])
def test_lines_come_in_the_order_of_their_times(
    plugin: PluginProcess, tmp_path: Path, started: list[ProxyProcess], observer: str
) -> None:
    proxy = start(started, tmp_path, plugin.main, "--observer", observer)
    rounds = 12
    for _ in range(rounds):
        # The next client connects the moment the answer is in: its connection used to be
        # logged before that exchange, whose line waited for decoding.
        with GolemClient("127.0.0.1", proxy.port, timeout=20) as client:
            client.send_command("ping", timeout=20)
    proxy.read_until(re.compile(rb"#%d\s+closed" % rounds))
    assert proxy.stop() == 0
    found = [LINE.match(line) for line in proxy.out.decode().splitlines()]
    lines = [line for line in found if line is not None]
    times = [datetime.datetime.strptime(line["clock"], "%H:%M:%S.%f") for line in lines]
    assert times == sorted(times), "\n".join(line.string for line in lines)
    order = [(int(line["conn"]), line["what"]) for line in lines]
    for conn in range(1, rounds + 1):
        assert order.index((conn, "ping")) < order.index((conn, "closed:"))
        if conn < rounds:
            assert order.index((conn, "ping")) < order.index((conn + 1, "connected"))
