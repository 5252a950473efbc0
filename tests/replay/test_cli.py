"""The real CLI as subprocesses: replay serving a GOLEM client, verify against the headless
plugin, diff of two traces."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from golem_core.profiles import GOLEM
from golem_proxy.events import SessionEnded
from golem_proxy.recording.format import read_recording
from golem_proxy.testing.client import GolemClient, RhinoCommandError
from golem_proxy.testing.plugin_process import PluginProcess
from tests.support.cli_helpers import reap, start_cli

from .traces import BOX, modelling_session

ROOT = Path(__file__).resolve().parents[2]
READY = re.compile(r"golem-proxy replay ready: main=(\S+):(\d+) gh=(\S+):(\d+) exchanges=(\d+)")


def golem_proxy(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "golem_proxy", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
    )


def verify_fresh(trace: Path, *args: str, seed: int = 42) -> subprocess.CompletedProcess[str]:
    """``golem-proxy verify`` against a fresh headless plugin."""
    with PluginProcess(seed=seed) as plugin:
        return golem_proxy(
            "verify", str(trace), "--target", str(plugin.main), "--gh-target", str(plugin.gh), *args
        )


@pytest.fixture(scope="module")
def demo_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A session recorded through the proxy from the headless plugin (seed 42)."""
    path = tmp_path_factory.mktemp("demo") / "demo.jsonl"
    done = golem_proxy("demo", "--out", str(path), "--seed", "42", "--quiet", timeout=120)
    assert done.returncode == 0, done.stderr
    return path


@contextmanager
def replaying(*args: str) -> Iterator[tuple[subprocess.Popen[str], re.Match[str]]]:
    """``replay`` on free ports with ``ARGS`` after them, for the block (then killed if it still
    runs); yields the process and the match of its ready line."""
    process = start_cli(
        "replay", "--listen", "127.0.0.1:0", "--gh-listen", "127.0.0.1:0", *args,
        env=dict(os.environ),
    )  # fmt: skip
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        ready = READY.search(line)
        assert ready is not None, line + (process.stderr.read() if process.stderr else "")
        yield process, ready
    finally:
        reap(process)


@pytest.fixture
def replay_process(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], re.Match[str], Path]]:
    trace = modelling_session(tmp_path / "session.jsonl")
    report = tmp_path / "report.json"
    ignore = ("--ignore", "scene.create_layer:params.name")
    with replaying(str(trace), *ignore, "--report", str(report)) as (process, match):
        yield process, match, report


def test_replay_cli_serves_a_golem_client(
    replay_process: tuple[subprocess.Popen[str], re.Match[str], Path],
) -> None:
    process, ready, report = replay_process
    assert ready[5] == "10"
    with GolemClient(ready[1], int(ready[2])) as client:  # connect pings, as the MCP server does
        layer = client.send_command(
            "scene.create_layer", {"name": "walls-7", "color": [200, 80, 40]}
        )
        assert layer["layer_index"] == 1
        box = client.send_command(
            "geometry.create_box", {"corner": [0, 0, 0], "width": 40, "depth": 10, "height": 30}
        )
        assert box["guid"] == BOX
        with pytest.raises(RhinoCommandError) as caught:
            client.send_command("geometry.create_box", {"corner": [1, 0, 0], "width": 40})
        assert caught.value.code == "NOT_FOUND"
        assert caught.value.message == (
            "no recorded geometry.create_box with these params; nearest: #3 (already used) "
            "differs at params.corner[0] (0.0 vs 1) and 2 more"
        )
    with GolemClient(ready[3], int(ready[4])) as gh:
        assert gh.send_command("grasshopper.list_components") == {"components": []}
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=15)
    assert process.returncode == 0, stderr
    summary = json.loads(report.read_text())
    assert summary["served"] == 5 and len(summary["misses"]) == 1
    assert [u["method"] for u in summary["unused"]] == [
        "geometry.create_sphere",
        "scene.list_objects",
        "operations.boolean_union",
        "scene.list_objects",
        "scene.get_object_info",
    ]
    assert "1 missed" in stderr and "unused #4 main geometry.create_sphere" in stderr


def test_replay_cli_rejects_a_bad_trace(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not a recording\n")
    done = golem_proxy("replay", str(bad), "--listen", "127.0.0.1:0")
    assert done.returncode == 2
    assert (
        done.stderr
        == f"golem-proxy: {bad}: not a golem-proxy recording (its first line is not JSON)\n"
    )


def test_verify_passes_against_the_same_plugin_and_across_seeds(demo_trace: Path) -> None:
    for seed in (42, 7):  # another seed hands out other GUIDs: verify maps them
        done = verify_fresh(demo_trace, seed=seed)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "verify: all 31 exchanges match" in done.stdout


def test_verify_fails_with_a_precise_diff_then_update_repairs(
    demo_trace: Path, tmp_path: Path
) -> None:
    changed = tmp_path / "changed.jsonl"
    text = demo_trace.read_text()
    # The recorded plugin said the first box was 41 wide: the live one says 40.
    assert '"max": [40.0, 10.0, 30.0]' in text
    changed.write_text(text.replace('"max": [40.0, 10.0, 30.0]', '"max": [41.0, 10.0, 30.0]', 1))
    # Each run gets a fresh plugin: a verify run changes the live document.
    failed = verify_fresh(changed, "--json")
    tolerant = verify_fresh(changed, "--float-tolerance", "1")
    ignoring = verify_fresh(changed, "--ignore", "geometry.create_box:result.bounding_box")
    assert failed.returncode == 1
    result = json.loads(failed.stdout)
    assert result["ok"] is False and len(result["failed"]) == 1
    (check,) = result["failed"]
    assert check["method"] == "geometry.create_box" and check["number"] == 4
    assert check["differences"] == [
        {"path": "result.bounding_box.max[0]", "kind": "changed", "recorded": 41.0, "live": 40.0}
    ]
    assert tolerant.returncode == 0 and ignoring.returncode == 0
    rendered = verify_fresh(changed)
    assert rendered.returncode == 1
    assert "#4 main geometry.create_box" in rendered.stdout
    assert "result.bounding_box.max[0]" in rendered.stdout
    updated = verify_fresh(changed, "--update")
    assert updated.returncode == 0 and "updated 1 response in" in updated.stderr
    assert changed.read_text().splitlines()[0] == text.splitlines()[0]  # header kept
    assert '"max": [41.0' not in changed.read_text()
    again = verify_fresh(changed)
    assert again.returncode == 0, again.stdout


def test_diff_cli(demo_trace: Path, tmp_path: Path) -> None:
    other_seed = tmp_path / "seed7.jsonl"
    done = golem_proxy("demo", "--out", str(other_seed), "--seed", "7", "--quiet", timeout=120)
    assert done.returncode == 0, done.stderr
    same = golem_proxy("diff", str(demo_trace), str(other_seed))
    assert same.returncode == 0, same.stdout
    assert "no difference" in same.stdout
    edited = tmp_path / "edited.jsonl"
    shutil.copy(demo_trace, edited)
    edited.write_text(edited.read_text().replace('"radius": 8.0,', '"radius": 9.0,', 1))
    different = golem_proxy("diff", str(demo_trace), str(edited), "--json")
    assert different.returncode == 1
    report = json.loads(different.stdout)
    assert report["equal"] is False
    (pair,) = report["exchanges"]
    assert pair["method"] == "geometry.create_sphere" and pair["status"] == "changed"
    assert pair["differences"][0] == {
        "path": "params.radius",
        "kind": "changed",
        "recorded": 8.0,
        "live": 9.0,
    }


def test_verify_fails_against_a_plugin_whose_document_differs(demo_trace: Path) -> None:
    with PluginProcess(seed=42) as plugin:
        with GolemClient(plugin.main.host, plugin.main.port) as client:
            client.send_command("geometry.create_sphere", {"center": [0, 0, 0], "radius": 1.0})
        done = golem_proxy(
            "verify", str(demo_trace), "--target", str(plugin.main), "--gh-target", str(plugin.gh)
        )
    assert done.returncode == 1
    assert "main scene.list_objects" in done.stdout and "result.objects" in done.stdout


@pytest.mark.parametrize("sample", ["modelling-session", "error-session", "grasshopper-session"])
def test_sample_recordings_verify_against_the_headless_plugin(sample: str) -> None:
    """The samples in recordings/ are what the headless plugin (seed 7) answers today."""
    done = verify_fresh(ROOT / "recordings" / f"{sample}.jsonl", seed=7)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize(
    "spelling",
    [
        "quoted",  # --on-miss "forward HOST:PORT"
        "two words",  # --on-miss forward HOST:PORT, as docs/replay.md and --help write it
        "two words, trace after",  # ... and the trace after it
        "equals",  # --on-miss forward=HOST:PORT
    ],
)
def test_replay_cli_forwards_misses_and_records_them(tmp_path: Path, spelling: str) -> None:
    trace = modelling_session(tmp_path / "session.jsonl")
    new = tmp_path / "new.jsonl"
    with PluginProcess(seed=5) as plugin:
        on_miss = {
            "quoted": ["--on-miss", f"forward {plugin.main}"],
            "two words": ["--on-miss", "forward", str(plugin.main)],
            "two words, trace after": ["--on-miss", "forward", str(plugin.main)],
            "equals": ["--on-miss", f"forward={plugin.main}"],
        }[spelling]
        files = [str(trace)]
        before, after = ([], files) if spelling.endswith("after") else (files, [])
        with replaying(*before, "--record-new", str(new), *on_miss, *after) as (process, ready):
            with GolemClient(ready[1], int(ready[2])) as client:
                assert (
                    client.send_command(
                        "geometry.create_box",
                        {"corner": [0, 0, 0], "width": 40, "depth": 10, "height": 30},
                    )["guid"]
                    == BOX
                )
                layers = client.send_command("scene.list_layers")  # not in the trace: live
                assert [layer["name"] for layer in layers["layers"]] == ["Default"]
            process.send_signal(signal.SIGINT)
            _, stderr = process.communicate(timeout=15)
    assert process.returncode == 0, stderr
    assert "1 missed (1 of them forwarded)" in stderr
    recorded = read_recording(str(new))
    exchanges = recorded.exchanges()
    assert [e.method for e in exchanges] == ["scene.list_layers"]
    assert json.loads(exchanges[0].response.payload)["result"] == layers
    # Stopped in order: the recording ends with its session-end line, as it promises.
    assert recorded.header.promises_session_end
    ended = recorded.events[-1]
    assert isinstance(ended, SessionEnded)
    assert (ended.reason, ended.exchanges) == ("stopped by SIGINT", 1)


def test_diff_says_when_it_cuts_a_value_and_where_the_whole_one_is(tmp_path: Path) -> None:
    """A value longer than the preview is cut with `…`; the output says so, and names
    ``--json``, which has it whole (a piped diff must not cut silently)."""
    reference = modelling_session(tmp_path / "a.jsonl")
    long_name = modelling_session(tmp_path / "b.jsonl", layer="walls-" + "x" * 200)
    done = golem_proxy("diff", str(reference), str(long_name))
    assert done.returncode == 1, done.stderr
    assert "…" in done.stdout
    assert "values longer than 80 characters are cut (…): --json prints them whole" in " ".join(
        done.stdout.split()
    )
    whole = json.loads(golem_proxy("diff", "--json", str(reference), str(long_name)).stdout)
    assert any("x" * 200 in json.dumps(pair) for pair in whole["exchanges"])
    short_only = golem_proxy(
        "diff", str(reference), str(modelling_session(tmp_path / "c.jsonl", layer="w"))
    )
    assert "are cut" not in short_only.stdout


def _with_line(source: Path, target: Path, number: int, line: bytes) -> Path:
    lines = source.read_bytes().splitlines(keepends=True)
    lines[number - 1] = line
    target.write_bytes(b"".join(lines))
    return target


def test_diff_and_verify_refuse_a_damaged_trace_as_show_does(
    demo_trace: Path, tmp_path: Path
) -> None:
    lines = demo_trace.read_bytes().splitlines(keepends=True)
    request = next(n for n, line in enumerate(lines, 1) if b'"dir":"c2s"' in line)
    damaged = {
        # a block a crash filled with zeros: no pattern takes it, so nothing may skip it
        "zeros": _with_line(demo_trace, tmp_path / "zeros.jsonl", 9, b"\0" * 40 + b"\n"),
        # a payload in the writer's layout whose text is not JSON: refused once decoded
        "payload": _with_line(
            demo_trace,
            tmp_path / "payload.jsonl",
            request,
            lines[request - 1][:-2] + b',"msg":{}}\n',
        ),
    }
    for path in damaged.values():
        show = golem_proxy("show", str(path))
        assert show.returncode == 2 and show.stderr.count("\n") == 1, show.stderr
        said = show.stderr.removeprefix("golem-proxy: ")
        assert said.startswith(f"{path}: line ")
        diff = golem_proxy("diff", str(demo_trace), str(path))
        assert (diff.returncode, diff.stderr) == (2, f"golem-proxy: trace B, {said}"), diff.stdout
        swapped = golem_proxy("diff", str(path), str(demo_trace))
        assert swapped.stderr == f"golem-proxy: trace A, {said}", swapped.stdout
        verify = verify_fresh(path)
        assert (verify.returncode, verify.stderr) == (2, show.stderr), verify.stdout


def test_verify_refuses_a_trace_with_no_exchange(demo_trace: Path, tmp_path: Path) -> None:
    empty = tmp_path / "header-only.jsonl"
    empty.write_bytes(demo_trace.read_bytes().splitlines(keepends=True)[0])
    done = verify_fresh(empty)
    assert done.returncode == 2, done.stdout
    assert done.stderr == (
        f"golem-proxy: {empty} has no exchange to verify (no request in it was answered)\n"
    )


def test_replay_refuses_a_damaged_payload_at_load_as_show_does(
    demo_trace: Path, tmp_path: Path
) -> None:
    # The last answer's payload, in the writer's layout: replay takes such a line unparsed and
    # would serve it last, if ever; it is refused before the replay is ready.
    lines = demo_trace.read_bytes().splitlines(keepends=True)
    answer = max(n for n, line in enumerate(lines, 1) if b'"dir":"s2c","n"' in line)
    line = lines[answer - 1]
    damaged = _with_line(
        demo_trace, tmp_path / "answer.jsonl", answer, line.replace(b',"msg":{', b',"msg":{,', 1)
    )
    show = golem_proxy("show", str(damaged))
    assert show.returncode == 2 and show.stderr.startswith(f"golem-proxy: {damaged}: line "), (
        show.stderr
    )
    replay = golem_proxy(
        "replay", str(damaged), "--listen", "127.0.0.1:0", "--gh-listen", "127.0.0.1:0"
    )
    assert (replay.returncode, replay.stderr) == (2, show.stderr), replay.stdout


def test_a_route_name_with_control_characters_is_printed_escaped(tmp_path: Path) -> None:
    """A trace may come from anyone: its route names reach the terminal escaped, as every
    other view writes them."""
    trace = tmp_path / "escape.jsonl"
    header = {
        "format": "golem-proxy-recording",
        "version": 2,
        "profile": "golem",
        "routes": [{"name": "ma\x1b[31min", "listen": "127.0.0.1:1", "upstream": "127.0.0.1:2"}],
        "started_at": "2026-12-06T00:00:00Z",
        "clock": "t = monotonic seconds since started_at",
        "tool": "golem-proxy",
        "redact": [],
    }
    trace.write_text(json.dumps(header) + "\n", encoding="utf-8")
    done = golem_proxy(
        "replay", str(trace), "--listen", "127.0.0.1:0", "--gh-listen", "127.0.0.1:0",
        "--idle-exit", "0.2",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout + done.stderr
    assert "ma\\x1b[31min=" in done.stdout


def test_the_replay_summary_adds_up_to_the_requests_malformed_ones_included(
    tmp_path: Path,
) -> None:
    trace = modelling_session(tmp_path / "session.jsonl")
    ignore = ("--ignore", "scene.create_layer:params.name")
    with replaying(str(trace), *ignore) as (process, ready):
        with GolemClient(ready[1], int(ready[2])) as client:
            client.send_command("scene.create_layer", {"name": "walls-7", "color": [200, 80, 40]})
            with socket.create_connection((ready[1], int(ready[2])), timeout=10) as raw:
                raw.sendall(GOLEM.frame_payload(b'{"id": "m1", "method": '))  # not JSON
                assert raw.recv(65536)  # answered with an error
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=15)
    assert process.returncode == 0, stderr
    line = next(line for line in stderr.splitlines() if line.startswith("golem-proxy replay: "))
    found = re.search(
        r"(\d+) requests: (\d+) from the trace, (\d+) built-in, (\d+) malformed, (\d+) missed", line
    )
    assert found is not None, line
    total, *parts = (int(number) for number in found.groups())
    assert parts[2] == 1 and total == sum(parts), line  # served, built-in, malformed, missed


def test_replay_says_the_recording_was_cut_short_as_every_reader_does(tmp_path: Path) -> None:
    """A recording whose last lines (the closes) are missing: `show` says the proxy stopped
    without closing it; replay, which serves from it, said nothing."""
    lines = modelling_session(tmp_path / "whole.jsonl").read_text().splitlines(keepends=True)
    cut = tmp_path / "cut.jsonl"
    cut.write_text("".join(line for line in lines if '"kind":"close"' not in line))
    said = "the proxy stopped without closing this recording"
    shown = golem_proxy("show", str(cut))
    assert said in shown.stderr, shown.stderr
    done = golem_proxy(
        "replay", str(cut), "--listen", "127.0.0.1:0", "--gh-listen", "127.0.0.1:0",
        "--idle-exit", "0.2",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    note = next(line for line in shown.stderr.splitlines() if said in line)
    assert note in done.stderr.splitlines(), done.stderr
