"""The generated dissector on captures laid out segment by segment, as a live capture can have
them and an export of a recording (one segment per frame) never does: many frames finished by
one segment, an answer whose id follows its bulk, requests both ways with the same id."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest

from golem_core.profiles import MCP, PROFILES
from golem_proxy.interop.dissector import (
    ENVELOPE_SCAN_BYTES,
    ENVELOPE_TAIL_BYTES,
    JSON_TREES_PER_PACKET,
    default_ports,
    generate_dissector,
    protocol_name,
)
from golem_proxy.interop.pcapng import ACK, FIN, MAX_SEGMENT, PSH, SYN, Endpoint, Half, PcapngWriter
from tests.interop.test_dissector import run_tshark
from tests.support.tshark_helpers import needs_tshark

Segment = tuple[str, bytes]
"""Who sends (``c2s`` or ``s2c``) and the bytes one TCP segment carries."""
Row = dict[str, list[str]]
"""One packet's fields: each name's values, one a frame it holds that has the field."""


def write_capture(path: Path, port: int, segments: list[Segment]) -> None:
    """One TCP connection to ``port``: handshake, each of ``segments`` (split only past what a
    packet holds), a FIN from each side."""
    client = Endpoint(ipaddress.ip_address("127.0.0.1"), 50000)
    server = Endpoint(ipaddress.ip_address("127.0.0.1"), port)
    out, back = Half(client, server), Half(server, client)
    with path.open("wb") as file:
        writer = PcapngWriter(file, "test")
        clock = 1_700_000_000_000_000
        seq = {"c2s": 1000, "s2c": 5000}

        def packet(side: str, flags: int, payload: bytes = b"") -> None:
            nonlocal clock
            clock += 1000
            other = "s2c" if side == "c2s" else "c2s"
            half = out if side == "c2s" else back
            writer.packet(clock, half.headers(seq[side], seq[other], flags, payload), payload)
            seq[side] += len(payload) + (1 if flags & (SYN | FIN) else 0)

        packet("c2s", SYN)
        packet("s2c", SYN | ACK)
        packet("c2s", ACK)
        for side, data in segments:
            for start in range(0, len(data), MAX_SEGMENT):
                packet(side, PSH | ACK, data[start : start + MAX_SEGMENT])
        packet("c2s", FIN | ACK)
        packet("s2c", FIN | ACK)
        packet("c2s", ACK)


def decode(tmp_path: Path, profile: str, segments: list[Segment], *names: str) -> list[Row]:
    """Each packet's ``names`` (given without the protocol's prefix), as tshark's two passes
    give them, from a capture of ``segments`` on the profile's first port."""
    capture, script = tmp_path / "x.pcapng", tmp_path / "x.lua"
    write_capture(capture, default_ports(PROFILES[profile])[0], segments)
    script.write_text(generate_dissector(PROFILES[profile]), encoding="utf-8")
    proto = protocol_name(PROFILES[profile])
    args = ["-2", "-X", f"lua_script:{script}", "-r", str(capture), "-Y", proto, "-T", "fields"]
    args += ["-E", "occurrence=a", "-E", "aggregator=\x1f"]
    for name in names:
        args += ["-e", name if "." in name else f"{proto}.{name}"]
    return [
        {
            name: column.split("\x1f") if column else []
            for name, column in zip(names, line.split("\t"))
        }
        for line in run_tshark(*args).splitlines()
    ]


@needs_tshark
@pytest.mark.parametrize("profile", ["golem", "jsonrpc-ndjson"])
def test_a_segment_that_finishes_a_thousand_frames_decodes_every_one(
    profile: str, tmp_path: Path
) -> None:
    encode = PROFILES[profile].encode
    pings = b"".join(encode({"id": n, "method": "ping", "params": {}}) for n in range(1000))
    (packet,) = decode(
        tmp_path, profile, [("c2s", pings)], "id", "method", "json_skipped", "json.key"
    )
    # tshark died (SIGSEGV) when one packet handed 500 frames to Wireshark's JSON dissector.
    assert packet["id"] == [str(n) for n in range(1000)]
    assert packet["method"] == ["ping"] * 1000
    limit = JSON_TREES_PER_PACKET
    said = f"{limit} JSON trees already built in this packet, the most one gets"
    assert packet["json_skipped"] == [said] * (1000 - limit)
    assert packet["json.key"] == ["id", "method", "params"] * limit


@needs_tshark
def test_an_id_written_after_a_large_result_still_links_the_answer(tmp_path: Path) -> None:
    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "capture"}}
    image = "i" * (ENVELOPE_SCAN_BYTES + ENVELOPE_TAIL_BYTES)
    # The MCP TypeScript SDK's member order: the id comes last.
    answer = {"result": {"content": [{"type": "image", "data": image}]}, "jsonrpc": "2.0", "id": 7}
    segments = [("c2s", MCP.encode(call)), ("s2c", MCP.encode(answer))]
    frames = decode(
        tmp_path, "mcp", segments, "frame.number", "type", "id", "request_in", "response_in"
    )
    request, response = frames
    assert response["type"] == ["response"] and response["id"] == ["7"]
    assert response["request_in"] == request["frame.number"]
    assert request["response_in"] == response["frame.number"]


@needs_tshark
def test_requests_each_way_with_the_same_id_link_to_their_own_answers(tmp_path: Path) -> None:
    # Both sides of MCP number their requests from 0: the server asks the client while the
    # client's call waits, and answers that call before the client answers it.
    messages: list[tuple[str, dict[str, object]]] = [
        ("c2s", {"jsonrpc": "2.0", "id": 0, "method": "tools/call", "params": {}}),
        ("s2c", {"jsonrpc": "2.0", "id": 0, "method": "sampling/createMessage", "params": {}}),
        ("s2c", {"jsonrpc": "2.0", "id": 0, "result": {"content": []}}),
        ("c2s", {"jsonrpc": "2.0", "id": 0, "result": {"role": "assistant"}}),
    ]
    segments = [(side, MCP.encode(message)) for side, message in messages]
    names = ("frame.number", "method", "request_in", "response_in")
    call, asked, answered, answer = decode(tmp_path, "mcp", segments, *names)
    assert call["method"] == ["tools/call"] and asked["method"] == ["sampling/createMessage"]
    assert call["response_in"] == answered["frame.number"]
    assert answered["request_in"] == call["frame.number"]
    assert asked["response_in"] == answer["frame.number"]
    assert answer["request_in"] == asked["frame.number"]
