"""The ``golem-proxy proxy`` and ``demo`` commands as a user runs them, against the headless
plugin in its own process."""

from __future__ import annotations

import argparse
import json
import re
import socket
import struct
from pathlib import Path

import pytest

from bench.robustness.proxy_cli import start_proxy_cli
from golem_core.profiles import GOLEM
from golem_proxy.commands.proxy import CHILD_PROCESS, IN_PROCESS, add_arguments, observer_place
from golem_proxy.events import ConnectionClosed, Direction, GapReason, ObservationLost
from golem_proxy.recording.format import read_recording
from golem_proxy.testing.client import GolemClient, RhinoCommandError
from golem_proxy.testing.plugin_process import PluginProcess
from tests.support.cli_helpers import start_cli
from tests.support.plugin_fixture import plugin_fixture
from tests.support.waiting import receive_exactly

plugin = plugin_fixture(seed=3, scope="function")


def test_proxy_command_relays_records_and_stops_on_ctrl_c(
    plugin: PluginProcess, tmp_path: Path
) -> None:
    record = tmp_path / "live.jsonl"
    cli = start_proxy_cli("--route", f"main@127.0.0.1:0={plugin.main}", "--record", str(record))
    try:
        assert any(re.search(rf"main\S*: 127\.0\.0\.1:{cli.port} →", line) for line in cli.lines)
        with GolemClient("127.0.0.1", cli.port) as client:
            box = client.send_command(
                "geometry.create_box",
                {"corner": [0, 0, 0], "width": 2, "depth": 3, "height": 4},
            )
            info = client.send_command("scene.get_object_info", {"guid": box["guid"]})
            assert info
            with pytest.raises(RhinoCommandError) as failure:
                client.send_command("scene.get_object_info", {"guid": "nope"})
            # The real plugin's server answers every dispatcher error as -32000.
            assert failure.value.code == -32000
            assert "Invalid GUID format: 'nope'" in str(failure.value)
        # By default the session is observed in a process of its own.
        assert observing_children(cli.process.pid), "no observing process under the proxy"
    finally:
        cli.stop()  # Ctrl-C
    assert cli.process.returncode == 0, cli.stderr
    recording = read_recording(str(record))
    assert [e.method for e in recording.exchanges()] == [
        "ping",
        "geometry.create_box",
        "scene.get_object_info",
        "scene.get_object_info",
    ]
    closed = [e for e in recording.events if isinstance(e, ConnectionClosed)]
    assert len(closed) == 1 and closed[0].reason == "client closed"


def test_a_request_too_costly_to_parse_is_forwarded_and_recorded_as_its_digest(
    plugin: PluginProcess, tmp_path: Path
) -> None:
    """``--observe-parse-limit``: a mesh whose parse would hold more is forwarded and
    answered as any, and recorded as a gap; the session goes on observed."""
    record = tmp_path / "live.jsonl"
    cli = start_proxy_cli(
        "--route",
        f"main@127.0.0.1:0={plugin.main}",
        "--record",
        str(record),
        "--observe-parse-limit",
        "1",
    )
    try:
        with GolemClient("127.0.0.1", cli.port) as client:
            vertices = [[i * 0.5, (i % 7) * 1.25, 0.0] for i in range(40_000)]
            faces = [[i, i + 1, i + 2] for i in range(0, 39_990, 3)]
            mesh = client.send_command(
                "geometry.create_mesh", {"vertices": vertices, "faces": faces}
            )
            assert mesh["vertex_count"] == 40_000
            assert client.send_command("scene.get_object_info", {"guid": mesh["guid"]})
    finally:
        cli.stop()
    assert cli.process.returncode == 0, cli.stderr
    recording = read_recording(str(record))
    gaps = [e for e in recording.events if isinstance(e, ObservationLost)]
    assert [gap.reason for gap in gaps] == [GapReason.FRAME_TOO_LARGE]
    assert "whose parse would hold about" in gaps[0].detail
    assert "over the 1 MiB observation limit" in gaps[0].detail
    assert [e.method for e in recording.exchanges()] == ["ping", "scene.get_object_info"]
    show = start_cli("show", str(record))
    out, err = show.communicate(timeout=60)
    assert show.returncode == 0, err
    assert "unobserved:frame-too-large" in out


def observing_children(pid: int) -> list[int]:
    """The processes under ``pid`` that run the observing process's module."""
    # Any of its threads may have started it (trio starts processes from a worker thread).
    tasks = Path(f"/proc/{pid}/task").iterdir()
    children = [child for task in tasks for child in (task / "children").read_text().split()]
    return [
        int(child)
        for child in children
        if b"golem_proxy.live.observing" in Path(f"/proc/{child}/cmdline").read_bytes()
    ]


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ([], CHILD_PROCESS),
        (["--tui"], CHILD_PROCESS),
        (["--fault", "drop"], CHILD_PROCESS),
        (["--tui", "--intercept", "~q"], IN_PROCESS),
        (["--intercept", "~q"], CHILD_PROCESS),
        (["--observer", "in-process"], IN_PROCESS),
        (["--observer", "child-process", "--tui", "--intercept", "~q"], CHILD_PROCESS),
    ],
)
def test_where_the_session_is_observed(given: list[str], expected: str) -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["--route", "127.0.0.1:0=127.0.0.1:9", *given])
    assert observer_place(args) == expected


def test_proxy_refuses_public_address_without_flag(plugin: PluginProcess) -> None:
    process = start_cli("proxy", "--route", f"0.0.0.0:0={plugin.main}")
    _, err = process.communicate(timeout=20)
    assert process.returncode == 2
    assert "--listen-public" in err


def test_demo_runs_a_recorded_session(tmp_path: Path) -> None:
    process = start_cli("demo", "--out", str(tmp_path / "demo.jsonl"), cwd=tmp_path)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    assert "session summary" in out
    recording = read_recording(str(tmp_path / "demo.jsonl"))
    methods = [e.method for e in recording.exchanges()]
    assert methods[0] == "ping" and "viewport.capture" in methods
    assert "grasshopper.bake_objects" in methods
    statuses = {recording.profile.describe(e.response.message) for e in recording.exchanges()}
    # The real plugin's server flattens every dispatcher error to -32000.
    assert statuses == {"ok", "APPLICATION_ERROR"}


def test_after_an_answer_not_observed_a_null_id_answers_the_request_sent_since(
    plugin: PluginProcess, tmp_path: Path
) -> None:
    """Two requests without an id, one at a time; the plugin answers each with a null id. The
    first answer is over ``--observe-frame-limit``: the second answer is the second request's,
    not the first's (which may have had its own in the bytes not observed)."""
    record = tmp_path / "live.jsonl"
    cli = start_proxy_cli(
        "--route", f"main@127.0.0.1:0={plugin.main}", "--record", str(record),
        "--observe-frame-limit", str(128 / (1 << 20)),
    )  # fmt: skip
    try:
        with socket.create_connection(("127.0.0.1", cli.port), timeout=10) as client:
            for method in ("scene.get_document_info", "ping"):
                client.sendall(GOLEM.encode({"method": method, "params": {}}))
                size = struct.unpack("!I", receive_exactly(client, 4))[0]
                answer = json.loads(receive_exactly(client, size))
                assert answer["id"] is None and answer["error"] is None, answer
    finally:
        cli.stop()
    assert cli.process.returncode == 0, cli.stderr
    recording = read_recording(str(record))
    gaps = [e for e in recording.events if isinstance(e, ObservationLost)]
    assert [(gap.reason, gap.direction) for gap in gaps] == [
        (GapReason.FRAME_TOO_LARGE, Direction.S2C)
    ]
    assert [(e.request.index, e.method) for e in recording.exchanges()] == [(1, "ping")]
