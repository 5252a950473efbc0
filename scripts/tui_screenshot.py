"""Build docs/tui.svg: the TUI over the fixed demo session, a viewport capture selected and
its picture in view.

Run: python scripts/tui_screenshot.py [OUTPUT.svg]
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from golem_proxy.tui.app import GolemProxyApp
from golem_proxy.tui.sources import RecordingSource
from tests.support.sessions import demo_session, write_recording


async def shoot(output: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "session.jsonl")
        write_recording(path, demo_session())
        source = RecordingSource.open(path)
        source.description = "recordings/session.jsonl"
        app = GolemProxyApp(
            source, source.profile, "golem-proxy — session.jsonl", header=source.header
        )
        async with app.run_test(size=(150, 44)) as pilot:
            while not app.source_done:
                await pilot.pause(0.01)
            app.model.toggle_mark(3)
            app.table.select_position(5)  # viewport.capture, its base64 image shortened
            wanted = app.model.flows[app.model.view[5]]
            while app.detail.flow is not wanted:  # drawn once the cursor rests
                await pilot.pause(0.01)
            while "Image " not in app.detail.text():  # decoded in a worker thread
                await pilot.pause(0.01)
            # The response's title and picture in view, under the request.
            title = app.query_one("#response-title")
            app.detail.scroll_to_widget(title, animate=False, top=True)
            await pilot.pause(0.2)
            folder, name = os.path.split(os.path.abspath(output))
            app.save_screenshot(filename=name, path=folder)


def main() -> None:
    default = os.path.join(os.path.dirname(__file__), "..", "docs", "tui.svg")
    output = sys.argv[1] if len(sys.argv) > 1 else default
    asyncio.run(shoot(output))
    print(f"wrote {os.path.normpath(output)}")


if __name__ == "__main__":
    main()
