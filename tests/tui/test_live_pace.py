"""What the live TUI does to keep its work bounded while events stream, and that it still
shows every exchange: the flows kept off the cyclic collector's walks while the app runs."""

from __future__ import annotations

import gc

from golem_core.profiles import GOLEM
from golem_proxy.events import Event
from golem_proxy.tui.app import GolemProxyApp
from golem_proxy.tui.collector import LIVE_YOUNG
from tests.support.sessions import SessionBuilder

from .helpers import ManualSource, run, wait_for


def pings(count: int) -> list[list[Event]]:
    """``count`` answered pings on one connection, as the events of each exchange."""
    builder = SessionBuilder()
    builder.open(1, 0.0)
    exchanges = [list(builder.events)]
    for n in range(count):
        builder.events = []
        request = builder.request(1, "ping", {"n": n}, n * 0.001)
        builder.respond(request, n * 0.001 + 0.0005, result={})
        exchanges.append(list(builder.events))
    exchanges[1] = exchanges[0] + exchanges[1]
    return exchanges[1:]


def test_a_live_app_keeps_its_flows_off_the_collector_until_it_ends() -> None:
    thresholds = gc.get_threshold()
    source = ManualSource(pings(3)[0])

    async def body() -> None:
        app = GolemProxyApp(source, GOLEM, "test")
        async with app.run_test(size=(120, 30)) as pilot:
            await wait_for(pilot, lambda: len(app.model.flows) == 1)
            assert gc.get_freeze_count() > 0
            # The collector still runs by itself, but only past many young objects (once a
            # batch otherwise, when the batch is held).
            assert gc.isenabled()
            assert gc.get_threshold()[0] == LIVE_YOUNG
        assert gc.get_freeze_count() == 0
        assert gc.isenabled()
        assert gc.get_threshold() == thresholds

    run(body())
