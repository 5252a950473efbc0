"""Build docs/tui-debugging.svg: a live proxy in the TUI in front of the headless plugin, and
a `scene.create_layer` request held by the intercept filter, in the panel above the flows with
its age and the keys that decide it. The script then edits its colour and sends it.

Run: python scripts/tui_debug_screenshot.py [OUTPUT.svg]
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from textual.widgets import TextArea

from golem_core.profiles import GOLEM
from golem_proxy.commands.proxy import live_source
from golem_proxy.live.control import LiveControl
from golem_proxy.live.intercept import InterceptEngine
from golem_proxy.live.proxy_options import ProxyOptions
from golem_proxy.live.session import SessionConfig
from golem_proxy.net.addresses import Address, Route
from golem_proxy.testing.client import GolemClient
from golem_proxy.tui.app import GolemProxyApp
from golem_proxy.tui.screens.edit_frame import EditFrame
from rhino_plugin import HeadlessPlugin, PluginOptions


async def until(pilot: object, check: object) -> None:
    for _ in range(4000):
        if check():  # type: ignore[operator]
            return
        await pilot.pause(0.005)  # type: ignore[attr-defined]
    raise RuntimeError("the session did not get there")


async def shoot(output: str, host: str, port: int) -> None:
    engine = InterceptEngine(GOLEM, None)
    engine.set_filter(r"~q & ~m ^scene\.create_layer$")
    config = SessionConfig(
        routes=[Route("main", Address("127.0.0.1", 0), Address(host, port))],
        profile=GOLEM,
        options=ProxyOptions(drain_timeout=0.5, intercept=engine),
    )
    control = LiveControl()
    source = live_source(config, control)
    app = GolemProxyApp(source, GOLEM, "golem-proxy", control=control)
    async with app.run_test(size=(120, 36)) as pilot:
        await until(pilot, lambda: "live on 127.0.0.1:" in app.status_bar.text)
        listen = int(app.status_bar.text.split("live on 127.0.0.1:")[1].split()[0])

        def client() -> None:
            with GolemClient("127.0.0.1", listen) as golem:
                golem.send_command("scene.get_document_info")
                red = {"r": 255, "g": 0, "b": 0}
                golem.send_command("scene.create_layer", {"name": "Walls", "color": red})

        threading.Thread(target=client, daemon=True).start()
        panel = app.held_panel
        await until(pilot, lambda: panel.display and panel.held)
        await pilot.pause(1.2)  # an age worth showing
        panel.focus()
        await pilot.pause(0.6)  # the next poll redraws the age
        folder, name = os.path.split(os.path.abspath(output))
        app.save_screenshot(filename=name, path=folder)
        await pilot.press("e")
        await until(pilot, lambda: isinstance(app.screen, EditFrame))
        request = json.loads(panel.held[0].payload)
        request["params"]["color"] = {"r": 0, "g": 0, "b": 255}
        app.screen.query_one(TextArea).text = json.dumps(request, indent=2)
        await pilot.press("ctrl+s")
        await until(pilot, lambda: not engine.held())


def main() -> None:
    default = os.path.join(os.path.dirname(__file__), "..", "docs", "tui-debugging.svg")
    output = sys.argv[1] if len(sys.argv) > 1 else default
    plugin = HeadlessPlugin("127.0.0.1", 0, 0, PluginOptions(seed=1))
    (host, port), _ = plugin.start()
    try:
        asyncio.run(shoot(output, host, port))
    finally:
        plugin.stop()
    print(f"wrote {os.path.normpath(output)}")


if __name__ == "__main__":
    main()
