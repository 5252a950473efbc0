"""``golem-proxy diff`` says what reading each trace noted, as ``show`` does, naming the trace:
a B cut short is not read as "B has fewer calls" without a word, and the notes change no
exit status. Recordings written by ``golem-proxy demo`` (the proxy's own recorder), edited as
a killed proxy or lost lines leave them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli_helpers import run_cli
from tests.support.traces import TraceBuilder


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A session recorded by the proxy from the headless plugin, ended in order."""
    path = tmp_path_factory.mktemp("demo") / "demo.jsonl"
    done = run_cli("demo", "--out", str(path), "--seed", "42", "--quiet", timeout=120)
    assert done.returncode == 0, done.stderr
    return path


def lines_of(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def kind_of(line: bytes) -> str:
    """The line's kind; the header's is empty."""
    return str(json.loads(line).get("kind", ""))


def frame_key(line: bytes) -> tuple[object, ...]:
    data = json.loads(line)
    return (data["conn"], data["dir"], data["n"])


def written(path: Path, lines: list[bytes]) -> Path:
    path.write_bytes(b"".join(lines))
    return path


def test_a_cut_short_b_is_noted_in_the_text_and_the_json(demo: Path, tmp_path: Path) -> None:
    lines = lines_of(demo)
    assert kind_of(lines[-1]) == "session-end"
    # Killed just before the request of the last exchange: that exchange, the closes of the
    # connections still open then and the session's end are missing.
    last = json.loads(next(line for line in reversed(lines) if kind_of(line) == "exchange"))
    request = next(
        n
        for n, line in enumerate(lines)
        if kind_of(line) == "frame" and frame_key(line) == (last["conn"], "c2s", last["req"])
    )
    kept = lines[:request]
    kinds = [kind_of(line) for line in kept[1:]]
    unclosed = kinds.count("open") - kinds.count("close")
    cut = written(tmp_path / "cut.jsonl", kept)
    connections = "1 connection" if unclosed == 1 else f"{unclosed} connections"
    note = (
        f"note: trace B, {cut}: the proxy stopped without closing this recording; the last "
        f"100 ms may be missing (no session-end line; {connections} never closed)"
    )

    text = run_cli("diff", str(demo), str(cut))
    assert text.returncode == 1, text.stderr
    assert text.stderr.splitlines() == [note]
    assert f"{last['method']} only in" in " ".join(text.stdout.split())

    as_json = run_cli("diff", "--json", str(demo), str(cut))
    assert as_json.returncode == 1, as_json.stderr
    report = json.loads(as_json.stdout)
    assert report["notes"] == {"a": [], "b": [note]}
    assert report["counts"]["only-a"] == 1
    assert as_json.stderr.splitlines() == [note]


def test_a_trace_missing_only_its_end_is_noted_and_still_equal(demo: Path, tmp_path: Path) -> None:
    """The notes change no exit status: the exchanges are the same, so the diff exits 0."""
    no_end = written(tmp_path / "no-end.jsonl", lines_of(demo)[:-1])
    note = (
        f"note: trace A, {no_end}: the proxy stopped without closing this recording; the last "
        "100 ms may be missing (no session-end line)"
    )
    done = run_cli("diff", str(no_end), str(demo))
    assert done.returncode == 0, done.stderr
    assert "no difference" in done.stdout
    assert done.stderr.splitlines() == [note]
    report = json.loads(run_cli("diff", "--json", str(no_end), str(demo)).stdout)
    assert (report["equal"], report["notes"]) == (True, {"a": [note], "b": []})


def test_lines_lost_from_either_trace_are_noted_with_its_name(demo: Path, tmp_path: Path) -> None:
    lines = lines_of(demo)
    # The first exchange whose three lines follow each other, cut out whole.
    at = next(
        n
        for n in range(3, len(lines))
        if [kind_of(line) for line in lines[n - 2 : n + 1]] == ["frame", "frame", "exchange"]
    )
    before, after = json.loads(lines[at - 3])["seq"], json.loads(lines[at + 1])["seq"]
    assert after == before + 4
    lost = written(tmp_path / "lost.jsonl", lines[: at - 2] + lines[at + 1 :])
    said = (
        f"line {at - 1}: seq jumps from {before} to {after} (3 lines lost or out of order); "
        "flows near it may be wrong"
    )

    as_b = run_cli("diff", str(demo), str(lost))
    assert as_b.returncode == 1, as_b.stderr
    assert as_b.stderr.splitlines() == [f"note: trace B, {lost}: {said}"]
    as_a = run_cli("diff", "--json", str(lost), str(demo))
    assert as_a.returncode == 1, as_a.stderr
    assert json.loads(as_a.stdout)["notes"] == {"a": [f"note: trace A, {lost}: {said}"], "b": []}


def test_whole_traces_say_nothing_and_have_no_notes_member(demo: Path) -> None:
    done = run_cli("diff", "--json", str(demo), str(demo))
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert "notes" not in json.loads(done.stdout)


def long_session(path: Path, first: str, every_tenth: str, last: str) -> Path:
    """``first``, 600 calls of ``ping`` with every tenth ``every_tenth`` instead, ``last``:
    long enough that diff aligns them in windows."""
    with TraceBuilder.create(str(path)) as trace:
        trace.call(first, {}, {})
        for n in range(600):
            trace.call(every_tenth if n % 10 == 9 else "ping", {}, {"alive": True})
        trace.call(last, {}, {})
    return path


def test_a_diff_aligned_in_windows_says_so_in_the_text_and_the_json(tmp_path: Path) -> None:
    a = long_session(tmp_path / "a.jsonl", "scene.create_layer", "ping", "scene.undo")
    b = long_session(tmp_path / "b.jsonl", "geometry.create_box", "scene.list_objects", "x.y")
    said = (
        "aligned in windows of 100 exchanges on route main (the traces differ over 602 "
        "exchanges of A and 602 of B): an exchange moved further than that shows as removed "
        "and added"
    )

    text = run_cli("diff", str(a), str(b))
    assert text.returncode == 1, text.stderr
    assert said in " ".join(text.stdout.split())
    assert text.stderr == ""

    as_json = run_cli("diff", "--json", str(a), str(b))
    assert as_json.returncode == 1, as_json.stderr
    report = json.loads(as_json.stdout)
    assert report["windowed"] == [
        {"route": "main", "window": 100, "a_exchanges": 602, "b_exchanges": 602}
    ]
    # B's every tenth is another method: its 540 pings are paired, in order, with A's.
    assert report["counts"] == {"same": 540, "only-a": 62, "only-b": 62}


def test_long_traces_alike_but_for_a_stretch_are_aligned_whole_and_say_nothing(
    tmp_path: Path,
) -> None:
    a = long_session(tmp_path / "a.jsonl", "scene.create_layer", "ping", "scene.undo")
    b = long_session(tmp_path / "b.jsonl", "scene.create_layer", "ping", "scene.redo")
    for first, second, code in ((a, a, 0), (a, b, 1)):
        text = run_cli("diff", str(first), str(second))
        assert text.returncode == code, text.stderr
        assert "windows" not in text.stdout
        report = json.loads(run_cli("diff", "--json", str(first), str(second)).stdout)
        assert "windowed" not in report
