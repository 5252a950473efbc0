"""``golem-proxy dissector``: the generated Lua, run by tshark on our own pcapng exports, finds
exactly the frames ``show`` lists, and links requests and responses by id."""

from __future__ import annotations

import json
import re
import subprocess
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from golem_core.profiles import GOLEM, JSONRPC_NDJSON, MCP, PROFILES
from golem_proxy.events import Direction
from golem_proxy.interop.dissector import (
    ENVELOPE_SCAN_BYTES,
    ENVELOPE_TAIL_BYTES,
    JSON_TREE_BYTES,
    JSON_TREE_DEPTH,
    JSON_TREE_TOKENS,
    default_ports,
    generate_dissector,
    protocol_name,
)
from golem_proxy.recording.format import RouteInfo
from golem_proxy.recording.samples import samples
from tests.mcp_layer.mcp_helpers import recorded_session
from tests.support.cli_helpers import ROOT, run_cli
from tests.support.trace_builder import TapSimulator, write_recording
from tests.support.tshark_helpers import TSHARK, needs_tshark, tshark

SAMPLES = list(samples().values())  # the shipped samples, not a demo's recordings


def upstream_ports(recording: Path) -> list[str]:
    header = json.loads(recording.read_text(encoding="utf-8").split("\n", 1)[0])
    return [route["upstream"].rsplit(":", 1)[1] for route in header["routes"]]


def decode(recording: Path, tmp_path: Path, *more: str, profile: str = "golem") -> Path:
    """Export ``recording`` to pcapng and write the dissector for its ports; returns the
    capture (the script is beside it, golem.lua)."""
    capture = tmp_path / "x.pcapng"
    done = run_cli("export", str(recording), "--format", "pcapng", "--out", str(capture))
    assert done.returncode == 0, done.stderr
    ports = [arg for port in upstream_ports(recording) for arg in ("--port", port)]
    script = tmp_path / "golem.lua"
    done = run_cli("dissector", "--profile", profile, "--out", str(script), *ports)
    assert done.returncode == 0, done.stderr
    return capture


def fields(capture: Path, *names: str, where: str = "", two_pass: bool = False) -> list[list[str]]:
    args = ["-X", f"lua_script:{capture.parent / 'golem.lua'}", "-r", str(capture)]
    args += ["-2"] if two_pass else []
    args += ["-Y", where] if where else []
    args += ["-T", "fields", "-E", "occurrence=a", "-E", "aggregator=|"]
    for name in names:
        args += ["-e", name]
    return [line.split("\t") for line in tshark(*args).splitlines()]


def show_json(recording: Path, *args: str) -> list[dict[str, object]]:
    done = run_cli("show", str(recording), "--json", *args)
    assert done.returncode in (0, 1), done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


@needs_tshark
def test_filter_by_method_finds_exactly_what_show_lists(tmp_path: Path) -> None:
    recording = ROOT / "recordings" / "modelling-session.jsonl"
    capture = decode(recording, tmp_path)
    found = fields(capture, "golem.id", where='golem.method == "scene.create_layer"')
    listed = show_json(recording, "--filter", "~m ^scene.create_layer$")
    assert listed
    assert sorted(row[0] for row in found) == sorted(str(flow["id"]) for flow in listed)


@needs_tshark
@pytest.mark.parametrize("sample", SAMPLES, ids=lambda path: path.stem)
def test_every_frame_is_decoded_and_linked(sample: Path, tmp_path: Path) -> None:
    capture = decode(sample, tmp_path)
    rows = fields(
        capture,
        "frame.number",
        "golem.method",
        "golem.id",
        "golem.error.code",
        "golem.request_in",
        "golem.response_in",
        "golem.type",
        where="golem",
        two_pass=True,
    )
    flows = show_json(sample)
    methods = Counter(m for row in rows for m in row[1].split("|") if m)
    assert methods == Counter(flow["method"] for flow in flows if flow["request"] is not None)
    # Every frame the recording holds is one decoded GOLEM frame: 100% of them.
    recorded = sample.read_text(encoding="utf-8").count('"kind":"frame"')
    assert sum(len(row[6].split("|")) for row in rows) == recorded
    codes = Counter(c for row in rows for c in row[3].split("|") if c)
    expected = Counter(
        str(flow["response"]["error"]["code"])  # type: ignore[index]
        for flow in flows
        if isinstance(flow.get("response"), dict)
        and isinstance(flow["response"].get("error"), dict)  # type: ignore[union-attr]
    )
    assert codes == expected
    number = {row[0]: row for row in rows}
    links = 0
    for row in rows:
        for answer in filter(None, row[5].split("|")):
            assert row[0] in number[answer][4].split("|")
            links += 1
    answered = sum(1 for flow in flows if flow["request"] and flow["response"] and flow["id"])
    assert links == answered


@needs_tshark
def test_frames_split_across_segments_are_reassembled(tmp_path: Path) -> None:
    tap = TapSimulator(GOLEM)
    tap.open(1)
    request = {"id": 7, "method": "scene.import", "params": {"blob": "y" * 150_000}}
    tap.request(1, request)
    tap.respond(1, {"id": 7, "result": None, "error": {"code": "IMPORT_FAILED", "message": "x"}})
    tap.close(1)
    recording = tmp_path / "big.jsonl"
    recording.write_bytes(write_recording(tap.events))
    capture = decode(recording, tmp_path)
    rows = fields(capture, "golem.length", "golem.method", "golem.error.code", where="golem")
    payload_length = str(len(GOLEM.encode_payload(request)))
    assert [row[:2] for row in rows if row[1]] == [[payload_length, "scene.import"]]
    assert [row[2] for row in rows if row[2]] == ["IMPORT_FAILED"]


@needs_tshark
def test_ndjson_over_line_framing(tmp_path: Path) -> None:
    tap = TapSimulator(JSONRPC_NDJSON)
    tap.open(1)
    tap.request(1, {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}, chunk=5)
    tap.respond(1, {"jsonrpc": "2.0", "id": 1, "result": {"tools": []}})
    tap.request(1, {"jsonrpc": "2.0", "id": 2, "method": "nope"})
    tap.respond(1, {"jsonrpc": "2.0", "id": 2, "error": {"code": -32601, "message": "no"}})
    # A line longer than three TCP segments is one frame too.
    tap.request(1, {"jsonrpc": "2.0", "id": 3, "method": "long", "params": ["y" * 200_000]})
    tap.respond(1, {"jsonrpc": "2.0", "id": 3, "result": {}})
    tap.close(1)
    recording = tmp_path / "nd.jsonl"
    recording.write_bytes(write_recording(tap.events, "jsonrpc-ndjson"))
    capture = decode(recording, tmp_path, profile="jsonrpc-ndjson")
    names = ("jsonrpc_ndjson.method", "jsonrpc_ndjson.error.code", "jsonrpc_ndjson.request_in")
    rows = fields(capture, *names, where="jsonrpc_ndjson", two_pass=True)
    assert [m for row in rows for m in row[0].split("|") if m] == ["tools/list", "nope", "long"]
    assert [c for row in rows for c in row[1].split("|") if c] == ["-32601"]
    assert len([link for row in rows for link in row[2].split("|") if link]) == 3


def test_the_script_carries_the_profile() -> None:
    lua = generate_dissector(GOLEM, [40000])
    assert default_ports(GOLEM) == [9876, 9877, 19876, 19877]
    # NDJSON's server is a Unix socket: the pseudo port its pcapng export gets.
    assert default_ports(JSONRPC_NDJSON) == [9876]
    # The stdio hop of `golem-proxy mcp`, after GOLEM's two routes in its recordings.
    assert default_ports(MCP) == [9878]
    assert re.search(r"ipairs\(\{ 9876, 9877, 19876, 19877, 40000 \}\)", lua)
    assert "local HEADER = 4" in lua and ":uint()" in lua
    assert f"local CAP = {GOLEM.default_cap}" in lua
    assert '"golem.error.code"' in lua and "dissect_tcp_pdus" in lua
    assert f"local JSON_TOKENS = {JSON_TREE_TOKENS}" in lua
    # Wireshark has a protocol called mcp (the Miscabling Protocol) and refuses a second.
    assert [protocol_name(profile) for profile in PROFILES.values()] == [
        "golem",
        "jsonrpc_ndjson",
        "mcp_stdio",
    ]
    assert 'Proto("mcp_stdio", ' in generate_dissector(MCP)


def test_bad_port_is_one_line(tmp_path: Path) -> None:
    done = run_cli("dissector", "--out", str(tmp_path / "x.lua"), "--port", "99999")
    assert done.returncode == 2
    assert done.stderr.startswith("golem-proxy: ") and len(done.stderr.splitlines()) == 1


@needs_tshark
def test_a_header_over_the_limit_is_flagged_not_awaited(tmp_path: Path) -> None:
    tap = TapSimulator(GOLEM)
    tap.open(1)
    tap.request(1, {"id": 1, "method": "ping", "params": {}})
    tap.send(1, Direction.C2S, b"\xff\xff\xff\xf0" + b"junk" * 10)
    tap.close(1)
    recording = tmp_path / "oversized.jsonl"
    recording.write_bytes(write_recording(tap.events))
    capture = decode(recording, tmp_path)
    rows = fields(capture, "golem.method", "golem.length", where="golem.too_large || golem.method")
    # The oversized header, then its body read as the next header (over the limit too): no
    # wait for the 4 GiB it declared, every frame after it still shown.
    assert [row[0] for row in rows] == ["ping", "", ""]
    assert rows[1][1] == str(0xFFFFFFF0)
    packets = tshark("-r", str(capture), "-Y", "tcp.len == 0 && tcp.flags.push == 1")
    assert packets.strip() == ""  # the empty truncated tail made no empty segment


def run_tshark(*args: str) -> str:
    """tshark's stdout; fails the test on a non-zero exit (SIGSEGV: -11) or on a script that
    Wireshark would not load (it says so on stderr and goes on without it)."""
    assert TSHARK is not None
    done = subprocess.run(
        [TSHARK, *args], capture_output=True, text=True, encoding="utf-8", timeout=300
    )
    assert done.returncode == 0 and "Lua" not in done.stderr, (done.returncode, done.stderr)
    return done.stdout


def golem_recording(tmp_path: Path) -> Path:
    """GOLEM with the server on its default port, as `proxy` records it with no route given."""
    tap = TapSimulator(GOLEM)
    tap.open(1)
    tap.request(1, {"id": "a", "method": "ping", "params": {}})
    tap.respond(1, {"id": "a", "result": {"alive": True}, "error": None})
    tap.request(1, {"id": "b", "method": "scene.nope", "params": {}})
    tap.respond(1, {"id": "b", "result": None, "error": {"code": -32601, "message": "no"}})
    tap.close(1)
    path = tmp_path / "golem.jsonl"
    path.write_bytes(write_recording(tap.events))
    return path


def ndjson_recording(tmp_path: Path) -> Path:
    """JSON-RPC over NDJSON with its server on a Unix socket, as its default route has it; one
    answer is a line longer than three TCP segments."""
    tap = TapSimulator(JSONRPC_NDJSON)
    tap.open(1, "scrybe", upstream="unix:/run/scrybe/sock")
    tap.request(1, {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}, chunk=5)
    tap.respond(1, {"jsonrpc": "2.0", "id": 1, "result": {"text": "y" * 200_000}})
    tap.request(1, {"jsonrpc": "2.0", "id": 2, "method": "nope"})
    tap.respond(1, {"jsonrpc": "2.0", "id": 2, "error": {"code": -32601, "message": "no"}})
    tap.close(1)
    path = tmp_path / "ndjson.jsonl"
    routes = [RouteInfo("scrybe", "unix:/run/scrybe/proxy.sock", "unix:/run/scrybe/sock")]
    path.write_bytes(write_recording(tap.events, "jsonrpc-ndjson", routes))
    return path


def mcp_recording(tmp_path: Path) -> Path:
    """A session of ``golem-proxy mcp`` against the test server and the headless plugin; the
    last answer is a line of about 400 KB."""
    calls = [("list_layers", {}), ("broken_tool", {}), ("big_text", {"size": 200_000})]
    return recorded_session(tmp_path / "mcp.jsonl", calls)


RECORDINGS: dict[str, Callable[[Path], Path]] = {
    "golem": golem_recording,
    "jsonrpc-ndjson": ndjson_recording,
    "mcp": mcp_recording,
}


def recorded_frames(recording: Path, profile: str) -> list[dict[str, object]]:
    """The frame lines of ``recording`` on the routes of ``profile``."""
    lines = recording.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    routes = {r["name"] for r in header["routes"] if r.get("profile", header["profile"]) == profile}
    frames = [json.loads(line) for line in lines[1:] if '"kind":"frame"' in line]
    return [frame for frame in frames if frame["route"] in routes]


@needs_tshark
@pytest.mark.parametrize("name", sorted(PROFILES))
def test_every_profile_decodes_its_export_on_the_ports_the_export_uses(
    name: str, tmp_path: Path
) -> None:
    assert set(RECORDINGS) == set(PROFILES)  # a new profile needs a recording here
    recording = RECORDINGS[name](tmp_path)
    capture = tmp_path / "x.pcapng"
    done = run_cli("export", str(recording), "--format", "pcapng", "--out", str(capture))
    assert done.returncode == 0, done.stderr
    script = tmp_path / f"{name}.lua"
    done = run_cli("dissector", "--profile", name, "--out", str(script))  # its own ports only
    assert done.returncode == 0, done.stderr
    proto = protocol_name(PROFILES[name])
    args = ["-2", "-X", f"lua_script:{script}", "-r", str(capture), "-Y", proto, "-T", "fields"]
    args += ["-E", "occurrence=a", "-E", "aggregator=|"]
    for field in ("type", "method", "request_in"):
        args += ["-e", f"{proto}.{field}"]
    rows = [line.split("\t") for line in run_tshark(*args).splitlines()]
    frames = recorded_frames(recording, name)
    assert sum(len(row[0].split("|")) for row in rows) == len(frames) > 0
    methods = Counter(m for row in rows for m in row[1].split("|") if m)
    assert methods == Counter(frame["method"] for frame in frames if "method" in frame)
    links = sum(1 for row in rows for link in row[2].split("|") if link)
    assert links == sum(1 for frame in frames if "answers" in frame) > 0


def nested(depth: int) -> object:
    value: object = []
    for _ in range(depth - 1):
        value = [value]
    return value


@needs_tshark
def test_a_payload_too_large_for_wiresharks_json_tree_keeps_the_frames_own_fields(
    tmp_path: Path,
) -> None:
    tap = TapSimulator(GOLEM)
    tap.open(1)
    tap.request(1, {"id": "small", "method": "ping", "params": {}})
    tap.respond(1, {"id": "small", "result": {"alive": True}, "error": None})
    # 100,000 vertices (2.2 MB) made Wireshark's JSON dissector throw, which killed tshark.
    tap.request(1, {"id": "mesh", "method": "scene.create_layer", "params": {"name": "m"}})
    vertices = [[i * 0.5, i * 0.25, 1.0] for i in range(100_000)]
    mesh = {"id": "mesh", "result": {"vertices": vertices}, "error": None}
    tap.respond(1, mesh)
    many = {"id": "many", "method": "scene.add_points", "params": {"xs": [1] * 60_000}}
    tap.request(1, many)
    tap.respond(1, {"id": "many", "result": None, "error": {"code": "BAD", "message": "no"}})
    deep = {"id": "deep", "method": "scene.nest", "params": {"v": nested(150)}}
    tap.request(1, deep)
    tap.close(1)
    recording = tmp_path / "large.jsonl"
    recording.write_bytes(write_recording(tap.events))
    capture = decode(recording, tmp_path)
    script = f"lua_script:{tmp_path / 'golem.lua'}"
    # The filter docs/interop.md gives, as it was reported.
    shown = run_tshark(
        "-2", "-X", script, "-r", str(capture), "-Y", 'golem.method == "scene.create_layer"'
    )
    assert shown.count("scene.create_layer") == 1
    names = ["frame.number", "golem.id", "golem.type", "golem.method", "golem.error.code"]
    names += ["golem.request_in", "golem.response_in", "golem.json_skipped", "json.key"]
    args = ["-2", "-X", script, "-r", str(capture), "-Y", "golem", "-T", "fields"]
    for name in names:
        args += ["-e", name]
    rows = {
        (row[1], row[2]): dict(zip(names, row))
        for row in (line.split("\t") for line in run_tshark(*args).splitlines())
    }
    assert set(rows) == {
        ("small", "request"), ("small", "response"), ("mesh", "request"), ("mesh", "response"),
        ("many", "request"), ("many", "error"), ("deep", "request"),
    }  # fmt: skip
    for key in (("small", "request"), ("small", "response"), ("mesh", "request")):
        assert rows[key]["golem.json_skipped"] == "" and rows[key]["json.key"], key
    over = " handed to the JSON dissector"
    answer = rows["mesh", "response"]
    size = len(GOLEM.encode_payload(mesh))
    assert answer["golem.json_skipped"] == f"{size} bytes, over the {JSON_TREE_BYTES}{over}"
    assert answer["json.key"] == ""
    assert answer["golem.request_in"] == rows["mesh", "request"]["frame.number"]
    assert rows["mesh", "request"]["golem.response_in"] == answer["frame.number"]
    skipped = rows["many", "request"]["golem.json_skipped"]
    size = len(GOLEM.encode_payload(many))
    found = re.fullmatch(
        rf"(\d+) JSON tokens in {size} bytes, over the {JSON_TREE_TOKENS}{over}", skipped
    )
    assert found and int(found[1]) >= 60_000, skipped
    assert rows["many", "request"]["golem.method"] == "scene.add_points"
    assert rows["many", "error"]["golem.error.code"] == "BAD" and rows["many", "error"]["json.key"]
    size = len(GOLEM.encode_payload(deep))
    # The params object, the outer object and 150 lists.
    expected = f"nested 152 levels deep in {size} bytes, over the {JSON_TREE_DEPTH}{over}"
    assert rows["deep", "request"]["golem.json_skipped"] == expected
    only = f"frame.number == {answer['frame.number']}"
    detail = run_tshark("-2", "-X", script, "-r", str(capture), "-O", "golem", "-V", "-Y", only)
    size = len(GOLEM.encode_payload(mesh))
    read = f"first {ENVELOPE_SCAN_BYTES} and the last {ENVELOPE_TAIL_BYTES} of {size} bytes"
    assert f"[Envelope read from the {read}]" in detail
