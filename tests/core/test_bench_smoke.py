"""The benchmarks' functions run and agree with each other at tiny sizes (no timing): the codec
benchmark, and the proxy benchmark's upstream, measurements and attack rig on loopback."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_codec.py"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_codec", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_codec"] = module
    spec.loader.exec_module(module)
    return module


def test_contestants_agree(bench: ModuleType) -> None:
    stream = bench.make_requests(50)
    assert 150 < len(stream) / 50 < 260  # ≈200-byte requests
    for size in (7, 1000, bench.CHUNK):
        chunks = bench.chunks_of(stream, size)
        assert bench.ours_messages(chunks) == bench.minimal_messages(chunks) == 50
    big = bench.chunks_of(bench.make_big_frame(10_000), 333)
    assert bench.ours_framing(big) == bench.minimal_framing(big) == 10_000


def test_run_and_render(bench: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    result = bench.run(frames=20, big=4096, rounds=2)
    assert result["ratio_fps"] > 0 and result["ratio_mbs"] > 0
    bench.render(result)
    out = capsys.readouterr().out
    assert "(a)" in out and "(b)" in out and "frames/s" in out


# bench_proxy, bench_peers and the attack rig run on Python 3.11 only: they import rich and trio.


@pytest.fixture(scope="module")
def rig() -> ModuleType:
    """The bench directory on the path, as when a script there runs; the rig module."""
    pytest.importorskip("rich")
    sys.path.insert(0, str(BENCH.parent))
    import attack_rig

    return attack_rig


@pytest.fixture(scope="module")
def upstream(rig: ModuleType) -> Iterator[int]:
    """bench_peers' pre-encoded upstream, as bench_proxy starts it; its port."""
    import bench_proxy
    import processes

    port = processes.free_port()
    command = [sys.executable, bench_proxy.PEERS, "upstream", str(port)]
    process = processes.start_process(command, port)
    yield port
    processes.stop(process)


def test_process_memory_and_cpu_include_children(rig: ModuleType) -> None:
    import processes

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        deadline = time.monotonic() + 10
        while child.pid not in processes.tree(os.getpid()) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert child.pid in processes.tree(os.getpid())
        assert processes.rss(os.getpid()) > processes.status(os.getpid(), "VmRSS") > 0
        assert processes.cpu_seconds(os.getpid()) > 0
        by_process = processes.process_cpu_seconds(os.getpid())
        assert next(iter(by_process)) == os.getpid() and child.pid in by_process
        assert processes.settle(child, limit=5) < 5  # asleep: idle at once
    finally:
        child.kill()
        child.wait()


def test_cpu_per_call_shows_each_process_of_a_hop(rig: ModuleType) -> None:
    import proxy_measures
    import proxy_tables

    series = proxy_measures.Series()
    assert proxy_tables.cpu_per_call(series) == "-"  # a hop with no process of its own
    series.cpu_per_call = [[200e-6, 300e-6], [180e-6, 260e-6], [190e-6, 280e-6]]
    assert proxy_tables.cpu_per_call(series) == "470 µs (190 + 280)"
    series.cpu_per_call = [[150e-6]]
    assert proxy_tables.cpu_per_call(series) == "150 µs"


def test_the_append_cost_is_timed_in_the_recordings_directory_and_said(
    rig: ModuleType, tmp_path: Path
) -> None:
    import proxy_rig

    times = proxy_rig.append_cost(tmp_path, size=4096)
    assert len(times) == proxy_rig.APPENDS and all(t >= 0 for t in times)
    assert list(tmp_path.iterdir()) == [], "the file it grew is gone"
    line = proxy_rig.describe_append_cost([0.004, 0.042, 0.040], [0.003, 0.041, 0.05])
    assert "median 40.0 ms (4.0-42.0) before, 41.0 ms (3.0-50.0) after" in line
    assert "at most at ~419 MB/s" in line  # 16 MiB in the median before, 40 ms
    assert "dropped" not in line
    times = proxy_rig.append_cost(tmp_path, size=4096, as_recorder=True)
    assert len(times) == proxy_rig.APPENDS and list(tmp_path.iterdir()) == []
    line = proxy_rig.describe_append_cost([0.040], [0.041], [0.004, 0.005, 0.006])
    assert "as the recorder does: 5.0 ms (4.0-6.0) (~3,355 MB/s)" in line


def test_workloads_pair_each_request_with_its_response(rig: ModuleType) -> None:
    import bench_peers

    for name in bench_peers.WORKLOADS:
        work = bench_peers.workload(name)
        size, answer = work.request_size, work.response_size
        assert size * work.ring == len(work.requests) and answer * work.ring == len(work.responses)
        for n in (0, work.ring - 1):
            request = json.loads(work.requests[n * size + 4 : (n + 1) * size])
            response = json.loads(work.responses[n * answer + 4 : (n + 1) * answer])
            assert request["id"] == response["id"] and response["error"] is None
    assert bench_peers.workload("big").response_size == bench_peers.BIG + 4


def test_measurements_run_against_the_upstream(upstream: int) -> None:
    import bench_proxy

    assert bench_proxy.byte_exact(upstream)
    times = bench_proxy.round_trips(upstream, 5)
    assert len(times) == 5 and min(times) > 0
    assert bench_proxy.percentile(times, 0.99) == max(times)
    assert bench_proxy.percentile([3.0, 1.0, 2.0, 4.0], 0.5) == 2.0
    assert bench_proxy.big_responses(upstream, 1) > 0
    assert bench_proxy.pipelined(upstream, 70_000) > 0  # more than one ring of ids


def test_a_target_says_whether_noise_explains_a_miss(rig: ModuleType) -> None:
    import bench_proxy

    def verdict(ours: list[float]) -> str:
        return str(bench_proxy.Target("t", ours, [1.0, 1.0, 1.0], 0.85, False).verdict())

    assert verdict([0.9, 0.8, 0.95]) == "met"
    assert verdict([0.8, 0.9, 0.7]).startswith("MISSED, within noise (1/3")
    assert verdict([0.5, 0.6, 0.7]).startswith("MISSED, beyond noise")


def test_a_recording_tail_reads_only_the_markers_and_only_what_is_new(
    rig: ModuleType, tmp_path: Path
) -> None:
    import bench_proxy

    path = tmp_path / "r.jsonl"
    path.write_bytes(b'{"format":1}\n' + b'{"seq":1,"kind":"exchange","conn":1}\n' * 3
                     + b'{"seq":4,"kind":"frame","raw":"a2luZA=="}\n'
                     + b'{"seq":5,"kind":"violation"}\n')  # fmt: skip
    kinds = ("exchange", "violation", "unobserved", "gap")
    for block in (7, 1 << 20):  # markers straddling reads are counted once
        tail = bench_proxy.RecordingTail(path, kinds)
        assert tail.count(block) == {"exchange": 3, "violation": 1, "unobserved": 0, "gap": 0}
        assert tail.new_losses() == 0
    # The file grows: a marker cut between two writes is counted once, when it is whole.
    with open(path, "ab") as grown:
        grown.write(b'{"seq":6,"kind":"unobs')
        assert tail.new_losses() == 0
        grown.write(b'erved"}\n{"seq":7,"kind":"gap"}\n')
    assert tail.new_losses() == 2
    assert tail.new_losses() == 0  # nothing new since
    assert tail.count() == {"exchange": 3, "violation": 1, "unobserved": 1, "gap": 1}
    assert bench_proxy.RecordingTail(tmp_path / "missing.jsonl").count() is None
    series = bench_proxy.Series(requests=8, catch_up=[1.0])
    series.recorded = {"exchange": 4, "violation": 0, "unobserved": 2, "gap": 0}
    assert bench_proxy._observed(series) == "4 / 8 (50.0%); 2 unobserved; +1.0 s"
    full = bench_proxy.modes(True, 2, "full")[0]
    assert bench_proxy.observation_verdict(series, full).startswith(
        "every exchange recorded, 0 gaps: MISSED"
    )
    series.recorded = {"exchange": 8, "violation": 0, "unobserved": 0, "gap": 0}
    assert "0 gaps: met" in bench_proxy.observation_verdict(series, full)


@pytest.mark.parametrize("framing", ["golem", "ndjson"])
def test_rig_upstream_answers_requests_and_digests_everything(
    rig: ModuleType, framing: str
) -> None:
    up = rig.Upstream(framing, "answer")
    conn = rig.Conn(up.port)
    deadline = time.monotonic() + 10
    big = rig.PARSE_LIMIT + 10  # streamed past, never parsed
    if framing == "golem":
        assert conn.send(rig.HEADER.pack(big) + b"x" * big, deadline)
    else:
        assert conn.send(b"x" * big + b"\n", deadline)
    request = rig.encode({"id": "a", "method": "ping"}, framing)
    expected = rig.answer_for(request[4:] if framing == "golem" else request, framing)
    assert conn.send(request, deadline) and conn.wait_received(len(expected), 5)
    conn.close()
    assert rig.byte_exact([conn], up) == "yes"
    assert up.conns[0].received.count == conn.sent.count
    up.close()


def test_rig_silent_upstream_and_a_mismatch(rig: ModuleType) -> None:
    up = rig.Upstream("golem", "silent")
    conn = rig.Conn(up.port)
    assert conn.send(rig.encode({"id": 1, "method": "ping"}, "golem"), time.monotonic() + 5)
    conn.close()
    assert rig.byte_exact([conn], up) == "yes" and conn.received.count == 0
    conn.sent.add(b"never sent")
    assert rig.byte_exact([conn], up).startswith("NO (c2s")
    up.close()


def test_probe_times_round_trips(rig: ModuleType) -> None:
    up = rig.Upstream("golem", "answer")
    since = time.monotonic()
    probe = rig.Probe(up.port, "golem")
    deadline = time.monotonic() + 10
    while len(probe.samples) < 5 and time.monotonic() < deadline:
        time.sleep(0.01)
    probe.stop()
    assert len(probe.samples) >= 5 and probe.wrong == 0 and probe.failures == 0
    assert "rt" in probe.worst(since) and probe.worst_seconds(since) > 0
    up.close()


def test_an_attack_runs_against_the_proxy_command(rig: ModuleType) -> None:
    import attacks

    redact = next(a for a in attacks.ATTACKS if a.name.startswith("--redact"))
    row = attacks.run_attack(redact, 2.0)
    assert row.survived == "yes" and row.exact == "yes"
    assert any(f.startswith("forwarded 5") for f in row.findings)
    assert any(f.startswith("recorded ") for f in row.findings)


def test_a_broken_hop_fails_its_cells_not_the_run(
    upstream: int, capsys: pytest.CaptureFixture[str]
) -> None:
    import bench_proxy
    import processes
    from rich.console import Console

    configs = [
        bench_proxy.Config("direct", upstream),
        bench_proxy.Config(bench_proxy.RELAY, upstream),  # the upstream stands in for a relay
        bench_proxy.Config(bench_proxy.OURS, processes.free_port()),  # nothing listens there
        bench_proxy.Config(bench_proxy.MITM, missing="not installed"),
    ]
    results = bench_proxy.run(configs, rounds=2, trips=3, bigs=1, tiny=100, recordings={})
    ours = results[bench_proxy.OURS]
    assert ours.exact is None and len(ours.errors) == 7  # the check, then 3 per round
    assert results["direct"].exact is True and not results["direct"].errors
    full, flood = bench_proxy.modes(True, 2, "both")
    rows = bench_proxy.targets(results, full, bench_proxy.OURS)
    assert [row.verdict() for row in rows] == ["not measured"] * 4
    assert len(bench_proxy.targets(results, flood, bench_proxy.OURS)) == 1
    Console(width=200).print(bench_proxy.results_table(configs, results, full))
    Console(width=200).print(bench_proxy.targets_table(rows, full, bench_proxy.OURS))
    out = capsys.readouterr().out
    assert "failed" in out and "not installed" in out and "not measured" in out


@pytest.mark.parametrize("framing", ["golem", "ndjson"])
def test_rig_surrogate_error_upstream(rig: ModuleType, framing: str) -> None:
    up = rig.Upstream(framing, "surrogate-error")
    conn = rig.Conn(up.port)
    request = rig.encode({"id": "a", "method": "ping"}, framing)
    expected = rig.answer_for(request[4:] if framing == "golem" else request, framing, up.error)
    assert b"\\udfff" in expected and b'"result": {' not in expected
    assert conn.send(request, time.monotonic() + 5) and conn.wait_received(len(expected), 5)
    conn.close()
    assert rig.byte_exact([conn], up) == "yes"
    up.close()
