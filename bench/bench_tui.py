"""Time the TUI on a 100,000-exchange recording: writing it, loading it into the app (flows
a second, and the process's peak memory once loaded), paging through it, filtering it; and,
for comparison, filling a Textual DataTable.

Run: python bench/bench_tui.py [EXCHANGES] [--load-only]

``--load-only`` stops once the recording is loaded (load time, flows a second of wall and of
process CPU time, peak RSS): what a 500,000-exchange run needs, without the slower steps.
"""

from __future__ import annotations

import asyncio
import os
import random
import sys
import tempfile
import time
from typing import Any

from rich.console import Console
from rich.table import Table
from textual.app import App, ComposeResult
from textual.widgets import DataTable

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from golem_core.profiles import GOLEM
from golem_proxy.events import ConnectionOpened, Direction
from golem_proxy.live.tap import ConnectionTap
from golem_proxy.recording.format import Header, RecordingWriter, RouteInfo
from golem_proxy.tui.app import GolemProxyApp
from golem_proxy.tui.sources import RecordingSource
from golem_proxy.tui.widgets.flows_table import row_cells

_METHODS = (
    "scene.list_objects",
    "creation.create_box",
    "scene.get_object_info",
    "manipulation.move",
    "viewport.zoom_extents",
    "ping",
    "scene.list_layers",
)


def write_bulk_recording(path: str, exchanges: int, seed: int = 1) -> None:
    """``exchanges`` small request/response pairs over four connections, about 1% of them
    errors, at 1 ms intervals, run through the proxy's tap and written as it reports them."""
    rng = random.Random(seed)
    header = Header.new("golem", (RouteInfo("main", "127.0.0.1:19876", "127.0.0.1:9876"),))
    with RecordingWriter.create(path, header, overwrite=True) as writer:
        taps: dict[int, ConnectionTap] = {}
        for conn in range(1, 5):
            taps[conn] = ConnectionTap(conn, "main", GOLEM, writer.write)
            client = f"127.0.0.1:{50000 + conn}"
            opened = ConnectionOpened(
                conn=conn, route="main", client=client, upstream="127.0.0.1:9876", t=0.0
            )
            writer.write(opened)
        for number in range(exchanges):
            t = number * 0.001
            tap = taps[1 + number % 4]
            ident = f"{number:08x}-4e29-41d4-a716-446655440000"
            params = {"layer": "Default", "n": number}
            request = {"id": ident, "method": _METHODS[number % len(_METHODS)], "params": params}
            tap.process(Direction.C2S, GOLEM.encode(request), t)
            latency = rng.uniform(0.0002, 0.05)
            if rng.random() < 0.01:
                error = {"code": "OBJECT_NOT_FOUND", "message": "no such object"}
                response = {"id": ident, "result": None, "error": error}
            else:
                result = {"guid": f"{number:032x}", "ok": True}
                response = {"id": ident, "result": result, "error": None}
            tap.process(Direction.S2C, GOLEM.encode(response), t + latency)


async def bench_app(
    path: str, results: list[tuple[str, float, str]], *, load_only: bool = False
) -> None:
    source = RecordingSource.open(path)
    app = GolemProxyApp(source, source.profile, "bench")
    start = time.perf_counter()
    cpu_start = time.process_time()
    async with app.run_test(size=(160, 45)) as pilot:
        first = None
        while not app.source_done:
            if first is None and app.model.view:
                first = time.perf_counter() - start
            # Polled ten times a second: a pilot's pause makes the app process its messages,
            # and polling a hundred times a second cost a fifth of the load's CPU time.
            await pilot.pause(0.1)
        loaded = time.perf_counter() - start
        cpu = time.process_time() - cpu_start
        results.append(("first rows on screen", first or loaded, ""))
        flows = len(app.model.flows)
        note = (
            f"{flows:,} flows, {flows / loaded:,.0f} flows/s, {flows / cpu:,.0f} flows per "
            f"CPU-second, peak RSS {peak_rss()}"
        )
        results.append(("whole recording loaded", loaded, note))
        if load_only:
            return
        start = time.perf_counter()
        for _ in range(50):
            await pilot.press("x")  # unbound: what a pilot key press costs by itself
        elapsed = time.perf_counter() - start
        results.append(
            ("50 x pilot no-op key (baseline)", elapsed, f"{elapsed / 50 * 1e3:.1f} ms each")
        )
        await pilot.press("home")
        start = time.perf_counter()
        for _ in range(200):
            await pilot.press("pagedown")
        elapsed = time.perf_counter() - start
        results.append(
            ("200 x page down (with redraw)", elapsed, f"{elapsed / 200 * 1e3:.1f} ms each")
        )
        start = time.perf_counter()
        for position in range(0, 100_000, 1000):
            app.table.select_position(position)
            await pilot.pause()
        elapsed = time.perf_counter() - start
        results.append(("100 jumps + detail redraw", elapsed, f"{elapsed / 100 * 1e3:.1f} ms each"))
        table = app.table
        height = table.size.height
        start = time.perf_counter()
        for top in range(0, 100_000, 100):
            table.scroll_to(y=top, animate=False, immediate=True)
            for y in range(height):
                table.render_line(y)
        elapsed = time.perf_counter() - start
        note = f"{elapsed / 1000 * 1e3:.2f} ms per screenful of {height} lines"
        results.append(("render 1,000 screenfuls of rows", elapsed, note))
        start = time.perf_counter()
        await pilot.press("slash", *"~e", "enter")
        elapsed = time.perf_counter() - start
        results.append(("filter ~e over all flows", elapsed, f"{len(app.model.view):,} match"))


def peak_rss() -> str:
    """The process's peak resident memory (Linux), or "?" where /proc does not say."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return f"{int(line.split()[1]) / 1024:,.0f} MiB"
    except OSError:
        pass
    return "?"


class _TableApp(App[None]):
    def compose(self) -> ComposeResult:
        yield DataTable()


async def bench_datatable(
    rows: list[tuple[str, ...]], results: list[tuple[str, float, str]]
) -> None:
    app = _TableApp()
    async with app.run_test(size=(160, 45)) as pilot:
        table: DataTable[Any] = app.query_one(DataTable)
        table.add_columns(
            "", "#", "time", "route", "conn", "method", "status", "lat", "req", "resp"
        )
        start = time.perf_counter()
        table.add_rows(rows)
        await pilot.pause()
        elapsed = time.perf_counter() - start
        results.append(
            (f"DataTable.add_rows({len(rows):,}) + first paint", elapsed, "for comparison")
        )
        start = time.perf_counter()
        for _ in range(200):
            await pilot.press("pagedown")
        elapsed = time.perf_counter() - start
        results.append(("DataTable 200 x page down", elapsed, f"{elapsed / 200 * 1e3:.1f} ms each"))


def main() -> None:
    args = [arg for arg in sys.argv[1:] if arg != "--load-only"]
    load_only = "--load-only" in sys.argv[1:]
    exchanges = int(args[0]) if args else 100_000
    results: list[tuple[str, float, str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "bench.jsonl")
        start = time.perf_counter()
        write_bulk_recording(path, exchanges)
        size = os.path.getsize(path)
        results.append(("write recording", time.perf_counter() - start, f"{size / 2**20:.0f} MiB"))
        asyncio.run(bench_app(path, results, load_only=load_only))
        if not load_only:
            bench_without_ui(path, results)
    print_results(exchanges, results)


def bench_without_ui(path: str, results: list[tuple[str, float, str]]) -> None:
    source = RecordingSource.open(path)
    from golem_proxy.tui.bridge import EventBuffer
    from golem_proxy.tui.model import SessionModel

    buffer = EventBuffer(limit=None)
    start = time.perf_counter()
    source.run(buffer)
    events = buffer.drain().events
    results.append(
        ("read recording (no UI)", time.perf_counter() - start, f"{len(events):,} events")
    )
    model = SessionModel(source.profile)
    start = time.perf_counter()
    model.apply(events)
    results.append(("fold events into flows (no UI)", time.perf_counter() - start, ""))
    rows = [row_cells(flow, model) for flow in model.flows]
    asyncio.run(bench_datatable(rows, results))


def print_results(exchanges: int, results: list[tuple[str, float, str]]) -> None:
    table = Table(title=f"golem-proxy TUI, {exchanges:,} exchanges")
    table.add_column("step")
    table.add_column("seconds", justify="right")
    table.add_column("note")
    for step, seconds, note in results:
        table.add_row(step, f"{seconds:.3f}", note)
    Console().print(table)


if __name__ == "__main__":
    main()
