"""`update_trace` (``verify --update``) on traces verified against a peer on 127.0.0.1: an
answer that breaks the contract gets its violations written after its frame, with the lines'
numbers shifted so that no reader finds a line lost; a recording whose exchanges are no longer
those verified is left untouched."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import trio

import golem_proxy.replay.verify as verifying
from golem_core.profiles import get_profile
from golem_proxy.cli import main
from golem_proxy.events import Direction, ExchangeCompleted
from golem_proxy.recording.format import RecordingReader
from golem_proxy.replay.diffing import Comparator
from golem_proxy.replay.index import load_exchanges
from golem_proxy.replay.trace_update import TraceReadsOtherwise, update_trace
from golem_proxy.replay.verify import VerifyResult, verify_trace
from golem_proxy.testing.plugin_process import PluginProcess
from tests.support.cli_helpers import run_cli
from tests.support.peers import MisbehavingUpstream
from tests.support.traces import TraceBuilder

from .test_verify_pairing import METHODS, SCRYBE_ROUTES


def _failing_trace(path: Path, methods: tuple[str, ...] = METHODS) -> Path:
    """Each of ``methods`` recorded answered by an error (no violation in it)."""
    with TraceBuilder.create(str(path), "jsonrpc-ndjson", routes=SCRYBE_ROUTES) as trace:
        for method in methods:
            trace.call(method, {}, error=(-32000, "not yet"), route="scrybe")
    return path


def _verified(path: Path) -> tuple[VerifyResult, Comparator]:
    """``path`` verified against an honest `MisbehavingUpstream` (``{"echo": METHOD}``)."""
    comparator = Comparator()

    async def main() -> VerifyResult:
        upstream = MisbehavingUpstream(profile=get_profile("jsonrpc-ndjson"), mode="honest")
        async with trio.open_nursery() as nursery:
            address = await nursery.start(upstream.serve)
            trace = load_exchanges(str(path))
            try:
                targets = {"scrybe": address}
                result = await verify_trace(trace, targets, comparator, timeout=5, digests=True)
            finally:
                trace.close()
            nursery.cancel_scope.cancel()
        return result

    return trio.run(main), comparator


def test_new_violations_follow_their_frame_and_no_line_reads_lost(tmp_path: Path) -> None:
    path = _failing_trace(tmp_path / "failing.jsonl")
    result, comparator = _verified(path)
    assert update_trace(str(path), result, comparator) == 3
    with open(path, "rb") as stream:
        reader = RecordingReader(stream)
        exchanges = [event for event in reader if isinstance(event, ExchangeCompleted)]
        assert reader.seq.count == 0
    assert [e.response.message.obj["result"] for e in exchanges] == [{"echo": m} for m in METHODS]
    lines = [json.loads(line) for line in path.read_bytes().splitlines()[1:]]
    assert [line["seq"] for line in lines] == list(range(1, len(lines) + 1))
    # `state` and `open` answered without the members the 0.6 contract names: said right
    # after the answer, as the tap says it.
    shapes = [i for i, line in enumerate(lines) if line.get("rule") == "jsonrpc.result.shape"]
    assert [lines[i - 1]["msg"]["result"] for i in shapes] == [{"echo": "state"}, {"echo": "open"}]
    assert [lines[i + 1]["status"] for i in shapes] == ["ok", "ok"]
    checked = run_cli("check", str(path), "--json")
    report = json.loads(checked.stdout)
    assert report["complete"] is True, report
    assert report["errors"] >= 2


def test_a_trace_changed_since_it_was_verified_is_left_as_it_is(tmp_path: Path) -> None:
    path = _failing_trace(tmp_path / "changed.jsonl")
    result, comparator = _verified(path)
    # Another session written over it, with one more exchange first.
    _failing_trace(path, ("ping", *METHODS))
    before = path.read_bytes()
    with pytest.raises(TraceReadsOtherwise, match=r"exchange #1 reads otherwise"):
        update_trace(str(path), result, comparator)
    assert path.read_bytes() == before


def test_a_framing_error_s_violation_and_a_cut_last_line_are_kept_as_they_are(
    tmp_path: Path,
) -> None:
    """The plugin cut its last answer (a truncated frame: its violation names no frame), and
    the proxy was killed while it wrote its last line: both stay as they were, where the
    update stopped with an internal error on each."""
    path = tmp_path / "cut.jsonl"
    with TraceBuilder.create(str(path), "jsonrpc-ndjson", routes=SCRYBE_ROUTES) as trace:
        for method in METHODS:
            trace.call(method, {}, error=(-32000, "not yet"), route="scrybe")
        trace.tap.send(trace._conn("scrybe"), Direction.S2C, b'{"jsonrpc":"2.0","id":9')
        trace._write()
    cut_line = b'{"seq":999,"t":1.0,"kind":"fra'
    path.write_bytes(path.read_bytes() + cut_line)
    assert b'"frame":null' in path.read_bytes()
    result, comparator = _verified(path)
    assert update_trace(str(path), result, comparator) == 3
    data = path.read_bytes()
    assert data.endswith(b"\n" + cut_line)
    assert b'"frame":null' in data
    checked = run_cli("check", str(path), "--json")
    assert json.loads(checked.stdout)["errors"] >= 1, checked.stdout + checked.stderr


def test_verify_hashes_the_recorded_exchanges_only_to_update_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The digests of each recorded request and answer are `update_trace`'s check that the
    file still holds what was verified: a run that writes nothing takes none (it hashed every
    recorded answer of the trace), and says and exits as before."""
    path = tmp_path / "layers.jsonl"
    with TraceBuilder.create(str(path)) as trace:
        for _ in range(3):
            trace.call("scene.list_layers", {}, {"layers": ["not in the live document"]})
    hashed: list[bytes] = []
    digest = verifying.recorded_digest

    def counted(payload: bytes) -> bytes:
        hashed.append(payload)
        return digest(payload)

    monkeypatch.setattr(verifying, "recorded_digest", counted)
    with PluginProcess(seed=7) as plugin:
        target = str(plugin.main)
        assert main(["verify", str(path), "--target", target]) == 1
        out = capsys.readouterr().out
        assert "3 of 3 exchanges differ" in out and "result.layers[0]" in out
        assert hashed == []
        assert main(["verify", str(path), "--target", target, "--update"]) == 0
        assert "verify: updated 3 responses in" in capsys.readouterr().err
        assert len(hashed) == 6  # each exchange's request and answer, once
        assert main(["verify", str(path), "--target", target]) == 0
    assert len(hashed) == 6
