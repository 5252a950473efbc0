"""What a peer or a recording controls cannot break the TUI: control characters, markup and
lone surrogates are shown as inert escapes, and impossible values (a NaN time, a declared
length that is not a number) are shown, not raised. A recording the reader refuses is an
error inside the app."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from rich.console import Console

from golem_core.profiles import GOLEM
from golem_proxy.events import FramingErrorSeen
from golem_proxy.tui.app import GolemProxyApp
from golem_proxy.tui.sources import RecordingSource
from tests.support.sessions import SessionBuilder

from .helpers import ManualSource, loaded, run, select, wait_for

EVIL = "\x1b]0;owned\x07[red]x[/red]\x9b\ud800\u2028"


def screen_text(app: GolemProxyApp) -> str:
    """What the terminal would be sent for the current screen, as text."""
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), record=True)
    update = app.screen._compositor.render_update(full=True)
    console.print(update)
    return console.export_text()


class AsciiGolem:
    """The GOLEM profile, but encoding with JSON escapes: a lone surrogate travels as
    ``\\ud800`` on the wire (UTF-8 cannot carry it) and comes back out of the parser raw."""

    def __getattr__(self, name: str) -> Any:
        return getattr(GOLEM, name)

    def encode_payload(self, obj: Any) -> bytes:
        return json.dumps(obj).encode("ascii")


def hostile_session() -> SessionBuilder:
    s = SessionBuilder(AsciiGolem(), check=False)  # type: ignore[arg-type]
    s.open(1, 0.0, route="main" + EVIL)
    request = s.request(1, "scene." + EVIL, {"name" + EVIL: EVIL, "n": 1}, float("nan"))
    s.respond(request, 0.5, error={"code": "BAD" + EVIL, "message": EVIL})
    big = s.request(1, "big", {"items": [{"k" + EVIL: EVIL} for _ in range(300)]}, 1.0)
    s.respond(big, 1.1, result={})
    error = FramingErrorSeen(
        conn=1,
        route="main" + EVIL,
        direction=s.events[1].direction,  # type: ignore[attr-defined]
        t=2.0,
        **_oversized(),
    )
    s.events.append(error)
    return s


def _oversized() -> dict[str, Any]:
    from golem_core.framing import FrameErrorKind

    return {
        "kind": FrameErrorKind.OVERSIZED,
        "detail": "declared " + EVIL,
        "raw": b"\xff\xff",
        "recoverable": False,
        "declared_length": "lots",
    }


def test_hostile_text_and_values_are_shown_inert(tmp_path: Path) -> None:
    s = hostile_session()

    async def body() -> None:
        app = GolemProxyApp(ManualSource(s.events), GOLEM, "test")
        async with app.run_test(size=(100, 40)) as pilot:
            await wait_for(pilot, lambda: len(app.model.flows) == 3)
            for position in range(3):
                await select(pilot, position)
                text = screen_text(app)
                text.encode("utf-8")  # no lone surrogate reaches the terminal
                assert "\x1b" not in text and "\x9b" not in text and "\u2028" not in text
                if position == 0:
                    assert "\\x1b]0;owned\\x07[red]x[/red]" in text  # markup stays literal
                    assert "\\ud800" in text
            assert "declared length 'lots'" in app.detail.text()
            await pilot.press("y")  # a request with a lone surrogate is still copied
            await select(pilot, 0)
            await pilot.press("y")
            copied = list(app._notifications)[-1].message.rsplit(" written to ", 1)[1]
            assert json.loads(Path(copied).read_text())["params"]["n"] == 1
            for key in ("s", "c"):
                await pilot.press(key)
                screen_text(app).encode("utf-8")
                await pilot.press("escape")

    run(body())


def test_a_recording_the_reader_refuses_is_an_error_inside_the_app(
    demo_path: str, tmp_path: Path
) -> None:
    lines = Path(demo_path).read_text().splitlines()
    lines.insert(5, '{"seq": 999, "t": 1.0, "kind": "frame", "conn": "lots"')  # cut short
    damaged = tmp_path / "damaged.jsonl"
    damaged.write_text("\n".join(lines) + "\n")

    async def body() -> None:
        source = RecordingSource.open(str(damaged))
        app = GolemProxyApp(source, source.profile, "test")
        async with app.run_test(size=(80, 24)) as pilot:
            await loaded(pilot)
            assert app.failed
            assert app.banner.text.startswith("✖ recording error: ")
            assert "failed" in app.status_bar.text
            assert len(app.model.flows) >= 1  # what came before the damage is shown

    run(body())
