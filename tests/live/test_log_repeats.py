"""A flood of the same problem on a connection is folded in the live log: a few lines a second,
then one line with the count of the rest; nothing is left uncounted, the other connections'
lines are shown as before, and what is still being counted is said at the end."""

from __future__ import annotations

import io
import re

from rich.console import Console

from golem_core.profiles import GOLEM
from golem_proxy.events import Direction
from golem_proxy.live.log import EventLog, Verbosity
from golem_proxy.live.log_repeats import SHOWN, WINDOW, RepeatFold
from tests.support.trace_builder import TapSimulator

ZERO_LENGTH = bytes(4)
"""A GOLEM frame with no payload: malformed (no JSON), and a violation of the message rule."""
MALFORMED = "malformed invalid-json"
"""What the log calls such a frame."""
FOLDED = re.compile(r"… ([\d,]+) more (.+?) within [\d.]+ s, not shown")


def counted_lines(text: str) -> tuple[dict[tuple[str, str], int], dict[tuple[str, str], int]]:
    """The problem lines shown, and the counts the fold lines give, by (connection, what)."""
    shown: dict[tuple[str, str], int] = {}
    folded: dict[tuple[str, str], int] = {}
    for line in text.splitlines():
        conn = re.search(r"#(\d+)", line)
        if conn is None:
            continue
        where = conn.group(1)
        found = FOLDED.search(line)
        if found:
            key = (where, found.group(2))
            folded[key] = folded.get(key, 0) + int(found.group(1).replace(",", ""))
        elif MALFORMED in line:
            shown[(where, MALFORMED)] = shown.get((where, MALFORMED), 0) + 1
    return shown, folded


def test_a_fold_shows_a_few_lines_a_window_and_counts_the_rest() -> None:
    fold = RepeatFold(window=1.0, shown=2)
    admitted = [fold.admit("main", 1, "k", "x", t / 10) for t in range(8)]
    assert admitted == [True, True] + [False] * 6
    assert fold.ended(0.99) == []
    [done] = fold.ended(1.0)
    assert (done.shown, done.folded, done.started, done.last) == (2, 6, 0.0, 0.7)
    assert fold.admit("main", 1, "k", "x", 1.0), "a new window shows lines again"
    assert fold.pending() == [], "a window with every line shown leaves nothing to say"


def test_windows_over_are_forgotten_whether_or_not_lines_were_folded() -> None:
    fold = RepeatFold(window=1.0, shown=3)
    for conn in range(1000):  # a problem or two on each of many connections, none folded
        assert fold.admit("main", conn, "rule", "x", conn / 1000)
    assert fold.ended(2.5) == []
    assert fold._folds == {}


def test_a_flood_of_zero_length_frames_is_folded_per_connection_and_counted_whole() -> None:
    sim = TapSimulator(GOLEM)
    sim.open(1)
    sim.open(2)
    buffer = io.StringIO()
    log = EventLog(Console(file=buffer, width=200), GOLEM, Verbosity.QUIET)
    sent = {"1": 0, "2": 0}
    for step in range(25):  # 2.5 s: three windows on connection 1
        sim.events = []
        sim.send(1, Direction.C2S, ZERO_LENGTH * 400)
        sent["1"] += 400
        if step % 5 == 0:  # connection 2: two problems a window, never folded
            sim.send(2, Direction.C2S, ZERO_LENGTH)
            sent["2"] += 1
        for event in sim.events:
            log.handle(event)
        sim.tick(WINDOW / 10)
    log.flush_repeats()
    shown, folded = counted_lines(buffer.getvalue())
    assert shown[("1", MALFORMED)] == 3 * SHOWN, "a few lines in each of the three windows"
    assert shown[("1", MALFORMED)] + folded[("1", MALFORMED)] == sent["1"], "every frame counted"
    assert shown[("2", MALFORMED)] == sent["2"]
    assert ("2", MALFORMED) not in folded, "another connection's lines stand as before"
    # The violation each frame also is folded the same way, under its rule.
    rules = [key for key in folded if key[0] == "1" and key[1] != MALFORMED]
    assert rules and sum(folded[key] for key in rules) == sent["1"] - 3 * SHOWN
