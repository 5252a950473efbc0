"""A search of bodies the TUI does not hold whole (a large payload left in the recording,
searched as its message with its blobs elided) says so whenever what it looks for may lie in
what was elided: "0 of 2 flows" alone would read "it is in none of them"."""

from __future__ import annotations

from pathlib import Path

from tests.support.sessions import SessionBuilder, write_recording

from .helpers import recording_app, run, wait_for
from .test_payloads import notices

NOTE = "(elided parts of 1 flow not searched)"


def write_long_text_answer(path: Path) -> None:
    """A call answered with 300,000 ``x`` (a blob to the tap: a long run of base64-like
    characters), then a ping."""
    s = SessionBuilder(check=False)
    s.open(1, 0.0)
    request = s.request(1, "scene.describe", {"verbose": True}, 0.1)
    s.respond(request, 0.2, result={"text": "x" * 300_000, "n": 1})
    ping = s.request(1, "ping", {}, 0.3)
    s.respond(ping, 0.4, result={"pong": True})
    s.close(1, 0.5)
    write_recording(str(path), s.events)


def test_a_filter_and_find_say_they_did_not_search_an_elided_blob(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    write_long_text_answer(path)

    async def body() -> None:
        async with recording_app(str(path)) as (app, pilot):
            assert len(app.model.flows) == 2
            await pilot.press("slash", *"xxxxxxxxxx", "enter")
            await wait_for(pilot, lambda: "filter: xxxxxxxxxx" in app.status_bar.text)
            # Not found in what is kept, and said so: the answer's run was not searched.
            assert "0 of 2 flows" in app.status_bar.text
            assert NOTE in app.status_bar.text
            # A text no run of base64-like characters holds (a space) was searched whole.
            await pilot.press("slash", "ctrl+a", "ctrl+k", *'"x y"', "enter")
            await wait_for(pilot, lambda: 'filter: "x y"' in app.status_bar.text)
            assert "not searched" not in app.status_bar.text
            await pilot.press("slash", "ctrl+a", "ctrl+k", "enter")
            await wait_for(pilot, lambda: "filter:" not in app.status_bar.text)
            app.find_text = "xxxxxxxxxx"
            app.action_find(True)
            await wait_for(pilot, lambda: any("No flow contains" in n for n in notices(app)))
            assert notices(app)[-1] == f"No flow contains 'xxxxxxxxxx' {NOTE}"
            said = len(notices(app))
            app.find_text = "x y"
            app.action_find(True)
            await wait_for(pilot, lambda: len(notices(app)) > said)
            assert notices(app)[-1] == "No flow contains 'x y'"

    run(body())
