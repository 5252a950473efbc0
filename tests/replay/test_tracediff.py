"""The diff of two traces says which of them a damaged payload is in: A or B, with its file,
in the reader's words (a payload is decoded when compared; it can only be damaged then if the
file changed after it was loaded and checked)."""

from __future__ import annotations

import difflib
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from golem_proxy.commands import diff as diff_command
from golem_proxy.recording.format import RecordingError, read_recording
from golem_proxy.replay.diffing import Comparator
from golem_proxy.replay.index import ExchangeTrace, load_exchanges
from golem_proxy.replay.tracediff import DamagedTrace, TraceDiff, diff_traces
from tests.support.cli_helpers import run_main
from tests.support.traces import TraceBuilder

from .traces import modelling_session

REQUEST_LINE = 3


def damage_in_place(path: Path) -> str:
    """Make the first request's payload invalid JSON without changing the file's size (a
    loaded trace maps the file, so it sees the change); returns what the reader says of it."""
    lines = path.read_bytes().splitlines(keepends=True)
    line = lines[REQUEST_LINE - 1]
    at = sum(map(len, lines[: REQUEST_LINE - 1])) + line.index(b',"msg":{') + len(b',"msg":')
    with open(path, "r+b") as stream:
        stream.seek(at)
        stream.write(b"[")  # the payload's opening brace: ``[…}`` is no JSON
    with pytest.raises(RecordingError) as read:
        read_recording(str(path))
    return str(read.value)


@pytest.mark.parametrize("side", [0, 1], ids=["A", "B"])
def test_a_payload_damaged_after_loading_names_its_trace(tmp_path: Path, side: int) -> None:
    paths = [modelling_session(tmp_path / name) for name in ("a.jsonl", "b.jsonl")]
    traces = [load_exchanges(str(path)) for path in paths]
    try:
        said = damage_in_place(paths[side])
        with pytest.raises(DamagedTrace) as damaged:
            diff_traces(traces[0], traces[1], Comparator())
    finally:
        for trace in traces:
            trace.close()
    assert damaged.value.side == side
    assert str(damaged.value.error) == said
    assert said.startswith(f"{paths[side]}: line {REQUEST_LINE}: not JSON")


@pytest.mark.parametrize("side", [0, 1], ids=["A", "B"])
def test_the_diff_command_says_which_trace_and_its_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], side: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = [modelling_session(tmp_path / name) for name in ("a.jsonl", "b.jsonl")]
    loaded: list[ExchangeTrace] = []
    said: list[str] = []

    def load_then_damage(name: str, **options: Any) -> ExchangeTrace:
        trace = load_exchanges(name, **options)
        loaded.append(trace)
        if len(loaded) == 2:  # both loaded (and checked): one changes on disk
            said.append(damage_in_place(paths[side]))
        return trace

    monkeypatch.setattr(diff_command, "load_exchanges", load_then_damage)
    code, _, err = run_main(capsys, "diff", *map(str, paths))
    assert code == 2
    assert err == f"golem-proxy: trace {'AB'[side]}, {said[0]}\n"


Call = tuple[str, str]
"""A recorded call: (route, method)."""

CALLS = st.lists(
    st.tuples(st.sampled_from(["main", "gh"]), st.sampled_from(["ping", "scene.list_objects"])),
    max_size=25,
)


def session(path: Path, calls: list[Call]) -> ExchangeTrace:
    """The calls recorded by the test builder, loaded as diff loads a trace."""
    with TraceBuilder.create(str(path)) as trace:
        for route, method in calls:
            trace.call(method, {}, {"alive": True}, route=route)
    return load_exchanges(str(path))


def pairs_and_sides(diff: TraceDiff) -> tuple[list[tuple[int, int]], set[int], set[int]]:
    """A's and B's numbers paired, A's removed and B's added."""
    pairs = [(p.a.number, p.b.number) for p in diff.pairs if p.a is not None and p.b is not None]
    removed = {p.a.number for p in diff.pairs if p.b is None and p.a is not None}
    added = {p.b.number for p in diff.pairs if p.a is None and p.b is not None}
    return pairs, removed, added


def sequence_matcher_alignment(a: list[Call], b: list[Call]) -> tuple[Any, ...]:
    """What aligning each route's methods whole with SequenceMatcher gives, as numbers."""
    pairs: list[tuple[int, int]] = []
    removed: set[int] = set()
    added: set[int] = set()
    for route in dict.fromkeys([call[0] for call in a + b]):
        left = [n for n, call in enumerate(a, 1) if call[0] == route]
        right = [n for n, call in enumerate(b, 1) if call[0] == route]
        matcher = difflib.SequenceMatcher(
            None, [a[n - 1][1] for n in left], [b[n - 1][1] for n in right], autojunk=False
        )
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "equal":
                pairs += zip(left[i1:i2], right[j1:j2])
            else:
                removed.update(left[i1:i2])
                added.update(right[j1:j2])
    return sorted(pairs), removed, added


@given(CALLS, CALLS)
@settings(max_examples=40, deadline=None)
def test_short_traces_are_aligned_as_sequence_matcher_aligns_their_methods(
    a_calls: list[Call], b_calls: list[Call]
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        a = session(Path(folder) / "a.jsonl", a_calls)
        b = session(Path(folder) / "b.jsonl", b_calls)
        try:
            diff = diff_traces(a, b, Comparator())
        finally:
            a.close()
            b.close()
    pairs, removed, added = pairs_and_sides(diff)
    assert (sorted(pairs), removed, added) == sequence_matcher_alignment(a_calls, b_calls)
    assert diff.windowed == []
    assert "windowed" not in diff.to_json()


def test_an_insertion_in_a_long_run_aligned_in_windows_is_one_added_exchange(
    tmp_path: Path,
) -> None:
    pings: list[Call] = [("main", "ping")] * 300
    a = session(
        tmp_path / "a.jsonl", [("main", "scene.create_layer"), *pings, ("main", "scene.undo")]
    )
    b = session(
        tmp_path / "b.jsonl",
        [
            ("main", "geometry.create_box"),
            *pings[:120],
            ("main", "scene.get_document_info"),
            *pings[120:],
            ("main", "scene.redo"),
        ],
    )
    try:
        diff = diff_traces(a, b, Comparator(), quick_pairs=1000, window=40)
    finally:
        a.close()
        b.close()
    pairs, removed, added = pairs_and_sides(diff)
    assert pairs == [(n, n) for n in range(2, 122)] + [(n, n + 1) for n in range(122, 302)]
    assert (removed, added) == ({1, 302}, {1, 122, 303})
    assert [route.to_json() for route in diff.windowed] == [
        {"route": "main", "window": 40, "a_exchanges": 302, "b_exchanges": 303}
    ]
    assert diff.to_json()["windowed"] == [route.to_json() for route in diff.windowed]
    assert diff.windowed[0].sentence() == (
        "aligned in windows of 40 exchanges on route main (the traces differ over 302 "
        "exchanges of A and 303 of B): an exchange moved further than that shows as removed "
        "and added"
    )


def test_arrays_equal_in_c_still_differ_where_the_walk_says_so() -> None:
    # Equal arrays of numbers (any nesting) are decided at once; what Python's == takes for
    # equal and the comparison does not (a boolean and 1) is still found, on either side,
    # and a float tolerance still holds inside an array.
    comparator = Comparator()
    points = [[i * 0.5, i, None, "p"] for i in range(1_000)]
    assert comparator.compare({"v": points}, {"v": [list(p) for p in points]}) == []
    for recorded, live in (([1, [2, 1]], [1, [2, True]]), ([[True]], [[1]])):
        (difference,) = comparator.compare({"v": recorded}, {"v": live})
        assert difference.recorded is not difference.live
    tolerant = Comparator(float_tolerance=0.01)
    assert tolerant.compare({"v": [[1.0, 2.0]]}, {"v": [[1.001, 2.0]]}) == []
    (difference,) = Comparator().compare({"v": [[1.0, 2.0]]}, {"v": [[1.001, 2.0]]})
    assert difference.path.endswith("[0][0]") and difference.live == 1.001
    # A NaN answered where a NaN was recorded is the same answer (a trace compared with
    # itself has no difference), wherever it is; a NaN against a number is a difference.
    nan = float("nan")
    cases = (([nan, 1.0], 0), ([[1.0], [nan]], 0), ([float("inf"), float("-inf")], 0))
    for recorded, differences in cases:
        assert len(Comparator().compare({"v": [recorded]}, {"v": [recorded]})) == differences
        copied = json.loads(json.dumps(recorded))  # other NaN objects, equal as NaN
        assert len(Comparator().compare({"v": [recorded]}, {"v": [copied]})) == differences
    (difference,) = Comparator().compare({"v": [nan]}, {"v": [1.0]})
    assert difference.live == 1.0
