"""The live log fits the terminal's width, folding between fields, never inside a number and
its unit; piped it stays one line per event (issue 22 point 6)."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from golem_core.profiles import GOLEM
from golem_proxy.live.log import EventLog, Verbosity

from .trace_builder import golem_session

NUMBER_CUT_FROM_ITS_UNIT = re.compile(r"\d\n\s*(?:µs|ms|s|B|KiB|MiB)\b")


def shown(width: int, *, terminal: bool) -> str:
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, force_terminal=terminal, color_system=None)
    log = EventLog(console, GOLEM, Verbosity.VERBOSE, started_wall=1_700_000_000.0)
    for event in golem_session().events:
        log.handle(event)
    return buffer.getvalue()


def words(text: str) -> list[str]:
    return text.split()


@pytest.mark.parametrize("width", [60, 80, 100])
def test_every_line_fits_the_terminal(width: int) -> None:
    text = shown(width, terminal=True)
    assert all(len(line) <= width for line in text.splitlines()), text
    assert NUMBER_CUT_FROM_ITS_UNIT.search(text) is None, text


@pytest.mark.parametrize("width", [60, 80])
def test_folding_loses_nothing(width: int) -> None:
    # The same words in the same order as on a wide terminal (where nothing folds).
    assert words(shown(width, terminal=True)) == words(shown(400, terminal=True))


def test_a_continuation_is_indented_under_its_event() -> None:
    lines = shown(80, terminal=True).splitlines()
    folded = [number for number, line in enumerate(lines) if line.startswith("    ")]
    assert folded  # the error messages do not fit in 80 columns
    assert all(
        re.match(r"\d\d:\d\d:\d\d\.\d{3} ", lines[number - 1])
        or lines[number - 1].startswith("    ")
        for number in folded
    )


def test_piped_the_log_is_one_line_per_event_whatever_the_width() -> None:
    narrow, wide = shown(60, terminal=False), shown(400, terminal=False)
    assert narrow == wide
    assert all(re.match(r"\d\d:\d\d:\d\d\.\d{3} ", line) for line in narrow.splitlines())
