"""A value ``--redact`` replaced stays hidden after the observing process that learned it is
killed and another takes over (``proxy --observer child-process``): the forwarding process
keeps what the observing processes learned (live/control_reader.py) and hands it to the one
that takes over. Before, ``scene.list_layers`` after the restart recorded the layer name in
clear. The real command line, the headless plugin, the observing process really killed; and
the control stream's parsing, fed whole, byte by byte and split anywhere."""

from __future__ import annotations

import base64
import json
import os
import signal
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.processes import observing_processes
from bench.robustness.proxy_cli import start_proxy_cli
from golem_proxy.events import Direction
from golem_proxy.live.control_reader import ControlReader, HeldEchoes
from golem_proxy.live.observer_launch import ACK, LEARNED, LEARNED_MAX, learned_message
from golem_proxy.live.observer_link import ObserverLink
from golem_proxy.live.redact import MAX_ECHOES, REDACTED, Echoes
from golem_proxy.recording.format import read_recording
from golem_proxy.testing.client import GolemClient
from golem_proxy.testing.plugin_process import PluginProcess
from tests.support.cli_helpers import run_cli

from .observer_child_helpers import process_gone, wait_for

SECRET = "TopSecretLayerName"


def _lines(record: Path) -> list[dict[str, Any]]:
    data = record.read_bytes()
    return [json.loads(line) for line in data[: data.rfind(b"\n") + 1].splitlines()[1:]]


def _restarts(record: Path) -> int:
    return sum(1 for line in _lines(record) if line["kind"] == "observation-restarted")


def _strings(node: Any) -> Iterator[str]:
    """Every string in ``node``, keys too, and what a base64 member (``raw``, ``original``)
    decodes to."""
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for key, value in node.items():
            yield key
            if key in ("raw", "original") and isinstance(value, str):
                yield base64.b64decode(value).decode("utf-8", "replace")
            yield from _strings(value)
    elif isinstance(node, list):
        for item in node:
            yield from _strings(item)


def _exchanges(record: Path) -> int:
    return sum(1 for line in _lines(record) if line["kind"] == "exchange")


def _kill_active(proxy: int, record: Path, restarts: int, recorded: int) -> None:
    """Kill -9 the observing process once it recorded ``recorded`` exchanges (it decoded
    what they carry: it learned their values) and its standby waits; wait for the take-over."""
    wait_for(lambda: _exchanges(record) == recorded, what=f"{recorded} exchanges recorded")
    wait_for(lambda: len(observing_processes(proxy)) == 2, what="a standby")
    active = observing_processes(proxy)[0]
    os.kill(active, signal.SIGKILL)
    wait_for(lambda: process_gone(active), what="the observing process to die")
    wait_for(lambda: _restarts(record) == restarts, what="the restart line")


def _listed(client: GolemClient) -> list[str]:
    return [layer["name"] for layer in client.send_command("scene.list_layers")["layers"]]


def test_a_value_redacted_before_the_observing_process_died_stays_hidden_after(
    tmp_path: Path,
) -> None:
    record = tmp_path / "session.jsonl"
    with PluginProcess(seed=21) as plugin:
        cli = start_proxy_cli(
            "--route", f"127.0.0.1:0={plugin.main.host}:{plugin.main.port}",
            "--record", str(record), "--observer", "child-process", "--redact", "params.name",
        )  # fmt: skip
        try:
            # The plugin serves one connection at a time, as Rhino's does. Connecting pings.
            with GolemClient(port=cli.port) as kept:
                kept.send_command("scene.create_layer", {"name": SECRET})
                assert SECRET in _listed(kept)
                _kill_active(cli.process.pid, record, 1, 3)
                # The same connection, taken up by the new process at its next frame: the
                # plugin lists the layer by name (forwarded as it came).
                assert SECRET in _listed(kept)
                assert SECRET in _listed(kept)
            with GolemClient(port=cli.port) as fresh:  # a connection the new process saw open
                assert SECRET in _listed(fresh)
                # A second death: the process that took over learned nothing itself, and what
                # the first one learned is handed on again.
                _kill_active(cli.process.pid, record, 2, 7)
                assert SECRET in _listed(fresh)
            with GolemClient(port=cli.port) as last:
                assert SECRET in _listed(last)
        finally:
            printed = cli.stop()
    assert cli.process.returncode == 0, cli.stderr
    assert "Traceback" not in cli.stderr, cli.stderr
    assert SECRET not in printed + cli.stderr
    assert SECRET.encode() not in record.read_bytes()
    lines = _lines(record)
    assert not [text for text in _strings(lines) if SECRET in text]
    # Each list after a restart was decoded and its echo replaced, not left out unobserved.
    answers = [
        line
        for line in lines
        if line["kind"] == "frame" and line["dir"] == "s2c" and "echo" in line.get("redacted", [])
    ]
    after = [line for line in answers if line["seq"] > _restart_seqs(lines)[0]]
    assert len(after) == 5, [line["seq"] for line in answers]
    assert all(
        REDACTED in [layer["name"] for layer in line["msg"]["result"]["layers"]] for line in after
    )
    assert _exchanges(record) == 10  # each call, its ``ping`` too: none left unobserved
    assert not read_recording(str(record)).truncated_tail
    # It loads and reads as sound; the two gaps are what a restart leaves.
    checked = run_cli("check", "--allow-incomplete", str(record))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "0 errors, 0 warnings" in checked.stdout, checked.stdout


def _restart_seqs(lines: list[dict[str, Any]]) -> list[int]:
    return [line["seq"] for line in lines if line["kind"] == "observation-restarted"]


def test_the_control_stream_is_read_however_it_is_split() -> None:
    """Acknowledgements and learned values, interleaved, fed whole, byte by byte and in two
    pieces at every cut: the same values held, the greatest acknowledgement taken; a rate of
    all ones (the mark's bytes, half an acknowledgement in) is no value."""
    values = [SECRET, "שכבה-סודית", "x" * 300, "a\udcffb"]
    stream = (
        ACK.pack(10, 2**64 - 1)
        + learned_message(values[0])
        + ACK.pack(20, 5)
        + learned_message(values[1])
        + learned_message(values[2])
        + ACK.pack(30, 2**64 - 1)
        + learned_message(values[3])
    )
    cuts: list[list[bytes]] = [[stream], [stream[i : i + 1] for i in range(len(stream))]]
    cuts += [[stream[:cut], stream[cut:]] for cut in range(1, len(stream))]
    for pieces in cuts:
        held = HeldEchoes()
        reader = ControlReader(held)
        reads = [reader.feed(piece) for piece in pieces]
        assert held.values() == tuple(values)
        assert all(read.broken is None for read in reads)
        assert max(read.ack for read in reads if read.ack is not None) == (30, 2**64 - 1)
        assert sum(read.new_values for read in reads) == len(values)


def test_a_learned_value_no_healthy_process_sends_is_refused() -> None:
    too_long = ACK.pack(LEARNED, LEARNED_MAX + 1) + b"x" * 16
    assert "learned value of" in str(ControlReader(HeldEchoes()).feed(too_long).broken)
    not_text = ACK.pack(LEARNED, 2) + b"\xff\xfe"
    assert "no UTF-8" in str(ControlReader(HeldEchoes()).feed(not_text).broken)
    assert learned_message("y" * (LEARNED_MAX + 1)) == b""


def test_the_values_held_are_the_last_max_echoes_learned() -> None:
    held = HeldEchoes()
    assert held.add("first") and not held.add("first")
    for number in range(MAX_ECHOES):
        held.add(f"value-{number}")
    assert len(held) == MAX_ECHOES and "first" not in held.values()
    assert held.values()[-1] == f"value-{MAX_ECHOES - 1}"


def test_echoes_tell_of_a_value_each_time_it_becomes_the_newest() -> None:
    told: list[list[str]] = []
    echoes = Echoes()
    echoes.on_new = told.append
    echoes.remember([SECRET, "abc"])  # too short to chase: never told
    echoes.remember([SECRET, "another-one"])  # the newest already: not told again
    echoes.remember([SECRET])  # held, behind another: told, so that both keep the same order
    echoes.remember([SECRET])
    assert told == [[SECRET], ["another-one"], [SECRET]]


def test_a_value_that_recurs_among_many_seen_once_is_held_by_the_forwarding_process() -> None:
    """A layer name redacted every tenth call among 300 scripts redacted once each: the
    observing process keeps it (it recurs), and so must the forwarding process."""
    held = HeldEchoes()
    echoes = Echoes()
    echoes.on_new = held.add_all
    for number in range(300):
        echoes.remember([f"script number {number:04d}"])
        if number % 10 == 0:
            echoes.remember([SECRET])
    assert SECRET in echoes.values()
    assert held.values() == echoes.values()


def test_what_a_dead_process_sent_and_no_read_took_is_read_at_the_restart() -> None:
    """The values sent just before the process died, still in the socket: `drain` takes them
    (with the last one cut short by the death, which is no value)."""
    ours, theirs = socket.socketpair()
    try:
        theirs.sendall(ACK.pack(1, 0) + learned_message(SECRET) + learned_message("cut-off")[:20])
        theirs.close()
        held = HeldEchoes()
        ControlReader(held).drain(ours)
        assert held.values() == (SECRET,)
    finally:
        ours.close()


@pytest.mark.parametrize("size", [0, 4, 5])
def test_a_mark_split_at_any_byte_waits_for_the_rest(size: int) -> None:
    held = HeldEchoes()
    reader = ControlReader(held)
    message = learned_message(SECRET)
    first = reader.feed(ACK.pack(7, 0) + message[:size])
    assert first.ack == (7, 0) and held.values() == ()
    reader.feed(message[size:])
    assert held.values() == (SECRET,)


def test_values_the_forwarding_process_finds_are_held_handed_on_or_not() -> None:
    """A frame not recorded as it came (dropped, edited): the forwarding process finds its
    values itself and holds them as it hands them on, and also once observation stopped,
    when nothing is handed on (the process that takes over is told of them)."""
    read_fd, write_fd = os.pipe()
    try:
        link = ObserverLink(write_fd, lambda: 0.0)
        held = HeldEchoes()
        link.on_learned = held.add_all
        link.unrecorded(1, Direction.S2C, (SECRET,), 0.0)
        link.stop()
        link.unrecorded(1, Direction.S2C, ("learned-while-down",), 0.0)
        assert held.values() == (SECRET, "learned-while-down")
    finally:
        os.close(read_fd)
        os.close(write_fd)
