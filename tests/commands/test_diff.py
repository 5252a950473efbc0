"""``golem-proxy diff`` says what reading each trace noted, as ``show`` does, naming the trace:
a B cut short is not read as "B has fewer calls" without a word, and the notes change no
exit status. Recordings written by ``golem-proxy demo`` (the proxy's own recorder), edited as
a killed proxy or lost lines leave them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import pytest
import trio

from golem_core.messages import Response
from golem_core.profiles import GOLEM
from golem_proxy.events import FrameSeen
from golem_proxy.live.proxy_options import ProxyOptions
from golem_proxy.live.tap_limits import ObserveLimits
from golem_proxy.testing.plugin_process import PluginProcess
from tests.support.cli_helpers import run_cli
from tests.support.harness import GolemClient, connect, start_proxy, stop_proxy
from tests.support.traces import TraceBuilder
from tests.support.waiting import until


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


# Requests, not only exchanges: one session recorded through the proxy from the headless
# plugin, whole, with the plugin gone in its last call, without that call, and with frames
# over a small limit left unobserved (a large request, a large answer).

PADDED = {"pad": "x" * 20_000}
"""Params that make a request larger than `SMALL_LIMIT`."""
SMALL_LIMIT = 8_000
"""A frame limit the padded request and viewport.capture's answer are over, no other frame."""
CAPTURE = {"width": 1920, "height": 1080}
"""An image whose answer is about 16 KB."""


def record(
    path: Path,
    *,
    plugin_gone_in_sleep: bool = False,
    sleep: bool = True,
    frame_limit: Optional[int] = None,
) -> Path:
    """Record ping, get_document_info, a padded list_objects, viewport.capture and a
    ``debug.sleep`` through the proxy. ``plugin_gone_in_sleep``: the plugin is stopped while
    it sleeps (the request is left unanswered, upstream closed); ``sleep``: the last call is
    made at all; ``frame_limit``: the proxy's --observe-frame-limit."""
    options = ProxyOptions(drain_timeout=0.5)
    if frame_limit is not None:
        options = ProxyOptions(drain_timeout=0.5, observe=ObserveLimits(frame=frame_limit))
    calls: list[tuple[str, dict[str, object]]] = [
        ("ping", {}),
        ("scene.get_document_info", {}),
        ("scene.list_objects", PADDED),
        ("viewport.capture", CAPTURE),
    ]

    async def session(plugin: PluginProcess) -> None:
        async with trio.open_nursery() as nursery:
            proxy = await start_proxy(nursery, plugin.main, record=str(path), options=options)
            client = GolemClient(await connect(proxy.listen))
            for n, (method, params) in enumerate(calls):
                reply = await client.call({"id": f"r{n}", "method": method, "params": params})
                assert isinstance(reply, Response), reply
            if sleep:
                asked = {"id": "zz", "method": "debug.sleep", "params": {"seconds": 0.2}}
                if not plugin_gone_in_sleep:
                    assert isinstance(await client.call(asked), Response)
                else:
                    await client.framed.send(GOLEM.encode(asked))
                    await until(
                        lambda: [e for e in proxy.of_type(FrameSeen) if e.method == "debug.sleep"]
                    )
                    await trio.to_thread.run_sync(plugin.stop)
                    with pytest.raises(EOFError):
                        await client.receive()
            await client.stream.aclose()
            await stop_proxy(proxy)

    with PluginProcess(seed=5, extra_args=("--debug-methods",)) as plugin:
        trio.run(session, plugin)
    return path


def rows_of(path: Path) -> dict[str, int]:
    """Each method's row number, as ``show`` numbers it (methods are called once each)."""
    done = run_cli("show", "--json", str(path))
    assert done.returncode == 0, done.stderr
    flows = [json.loads(line) for line in done.stdout.splitlines()]
    return {flow["method"]: flow["number"] for flow in flows if flow["method"]}


@pytest.fixture(scope="module")
def sessions(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    where = tmp_path_factory.mktemp("sessions")
    return {
        "whole": record(where / "whole.jsonl"),
        "gone": record(where / "gone.jsonl", plugin_gone_in_sleep=True),
        "short": record(where / "short.jsonl", sleep=False),
        "limited": record(where / "limited.jsonl", frame_limit=SMALL_LIMIT),
    }


def test_a_request_answered_in_a_and_not_in_b_is_said_so(sessions: dict[str, Path]) -> None:
    whole, gone = sessions["whole"], sessions["gone"]
    sleep = rows_of(gone)["debug.sleep"]
    assert sleep == rows_of(whole)["debug.sleep"]

    text = run_cli("diff", str(whole), str(gone))
    assert text.returncode == 1, text.stderr
    assert " ".join(text.stdout.split()) == (
        f"A#{sleep} B#{sleep} main debug.sleep answered in {whole}; unanswered (upstream "
        f"closed) in {gone} diff: 1 of 5 aligned requests differ"
    )
    assert text.stderr == ""

    report = json.loads(run_cli("diff", "--json", str(gone), str(whole)).stdout)
    assert report["counts"] == {"same": 4, "unanswered-a": 1}
    (pair,) = report["exchanges"]
    assert pair == {
        "route": "main",
        "method": "debug.sleep",
        "status": "unanswered-a",
        "a": sleep,
        "b": sleep,
        "differences": [],
        "a_status": "unanswered (upstream closed)",
    }


def test_a_request_unanswered_in_a_and_absent_from_b_is_a_difference(
    sessions: dict[str, Path],
) -> None:
    gone, short = sessions["gone"], sessions["short"]
    sleep = rows_of(gone)["debug.sleep"]
    text = run_cli("diff", str(gone), str(short))
    assert text.returncode == 1, text.stderr
    assert " ".join(text.stdout.split()) == (
        f"A#{sleep} — main debug.sleep only in {gone} (unanswered (upstream closed) there) "
        "diff: 1 of 5 aligned requests differ"
    )
    report = json.loads(run_cli("diff", "--json", str(gone), str(short)).stdout)
    assert report["counts"] == {"same": 4, "only-a": 1}


def test_requests_in_a_gap_of_b_are_said_to_be_there_and_the_gaps_noted(
    sessions: dict[str, Path],
) -> None:
    whole, limited = sessions["whole"], sessions["limited"]
    rows = rows_of(whole)
    listing, capture = rows["scene.list_objects"], rows["viewport.capture"]
    shown = json.loads(run_cli("show", "--json", str(limited)).stdout.splitlines()[listing - 1])
    assert shown["status"] == "unobserved:frame-too-large"  # the padded request: a gap row
    limited_rows = rows_of(limited)
    capture_b, sleep_b = limited_rows["viewport.capture"], limited_rows["debug.sleep"]
    answer_gap = capture_b + 1  # the capture's answer, over the limit too
    gaps = f"#{listing} unobserved:frame-too-large, #{answer_gap} unobserved:frame-too-large"
    note = (
        f"note: trace B, {limited}: 2 gaps in what was observed ({gaps}): what crossed there "
        "is not in the recording, so the comparison is partial"
    )

    text = run_cli("diff", str(whole), str(limited))
    assert text.returncode == 1, text.stderr
    assert " ".join(text.stdout.split()) == (
        f"A#{listing} — main scene.list_objects answered in {whole}; in {limited} a gap where "
        f"it may be, not compared (B#{listing} unobserved:frame-too-large) "
        # Its answer was too large to observe: the tap read its id, so it is answered there,
        # what it said not known.
        f"A#{capture} B#{capture_b} main viewport.capture answered in {whole}; answered "
        f"(unobserved:frame-too-large) in {limited}, its answer in a gap, not compared "
        f"(B#{answer_gap} unobserved:frame-too-large) "
        "diff: 2 of 5 aligned requests differ"
    )
    assert text.stderr.splitlines() == [note]

    report = json.loads(run_cli("diff", "--json", str(whole), str(limited)).stdout)
    assert report["counts"] == {"same": 3, "unobserved-b": 2}
    assert [(p["method"], p["b"], p.get("b_gap")) for p in report["exchanges"]] == [
        ("scene.list_objects", None, listing),
        ("viewport.capture", capture_b, answer_gap),
    ]
    assert report["notes"] == {"a": [], "b": [note]}
    assert sleep_b == capture_b + 2  # the rows after the gaps: numbered as show does


def with_session_line(path: Path, lines: list[bytes], kind: str, t: float) -> Path:
    """``lines`` (a recording without its session-end line), then a ``kind`` line (the
    observing process stopped, or restarted) at ``t`` and a session-end after it, numbered on
    so that no line reads as lost."""
    seq = json.loads(lines[-1])["seq"]
    detail = {"seq": seq + 1, "t": t, "kind": kind, "detail": "the observing process died"}
    end = {"seq": seq + 2, "t": t + 1.0, "kind": "session-end", "reason": "stopped"}
    added = [json.dumps(line).encode() + b"\n" for line in (detail, end)]
    return written(path, lines + added)


def test_a_restart_after_a_request_was_left_unanswered_hides_no_answer_to_it(
    sessions: dict[str, Path], tmp_path: Path
) -> None:
    """The request's connection closed before observation restarted: it had no answer left
    to cross there, so it reads unanswered in both traces, alike."""
    gone = sessions["gone"]
    lines = lines_of(gone)
    assert kind_of(lines[-1]) == "session-end"
    restarted = with_session_line(
        tmp_path / "restarted.jsonl", lines[:-1], "observation-restarted", 40.0
    )
    done = run_cli("diff", "--json", str(gone), str(restarted))
    assert done.returncode == 0, done.stdout
    report = json.loads(done.stdout)
    assert (report["equal"], report["counts"]) == (True, {"same": 5})


def test_requests_after_observation_stopped_in_b_are_said_to_be_in_that_gap(
    demo: Path, tmp_path: Path
) -> None:
    """Observation stopped halfway through B: every request of A after that, on every route,
    may have crossed unobserved there, so none is said to be missing from B."""
    lines = lines_of(demo)
    exchanges = [n for n, line in enumerate(lines) if kind_of(line) == "exchange"]
    cut_after = exchanges[len(exchanges) // 2]
    last = json.loads(lines[cut_after])
    stopped = with_session_line(
        tmp_path / "stopped.jsonl", lines[: cut_after + 1], "observation-stopped", last["t"]
    )
    shown = [json.loads(row) for row in run_cli("show", "--json", str(stopped)).stdout.splitlines()]
    gap = shown[-1]
    assert gap["status"] == "unobserved:stopped"

    done = run_cli("diff", "--json", str(demo), str(stopped))
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    after = report["exchanges"]
    assert set(report["counts"]) == {"same", "unobserved-b"}
    assert {pair["route"] for pair in after} == {"main", "gh"}  # every route's
    assert all((pair["b"], pair["b_gap"]) == (None, gap["number"]) for pair in after)
    text = " ".join(run_cli("diff", str(demo), str(stopped)).stdout.split())
    assert " only in " not in text
    in_gap = f"a gap where it may be, not compared (B#{gap['number']} unobserved:stopped)"
    assert text.count(in_gap) == len(after)
