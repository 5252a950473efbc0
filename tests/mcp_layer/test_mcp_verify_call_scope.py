"""``mcp-verify`` blames the tool call that sent a GOLEM request the recording never had under
it: the stand-in answers a call from the exchanges recorded under that same call (never with
the answer a later call recorded), and every request it cannot answer fails the run, named by
the call, the method and the params. Recorded through ``golem-proxy mcp --record`` with the
`mcp` stdio client and the headless plugin; played to builds of the test server that send one
request more."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.support.cli_helpers import run_cli

from .mcp_helpers import SERVER_COMMAND, environment, recorded_session

CALLS = [("create_layer", {"name": "A"}), ("list_layers", {})]


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("call-scope") / "session.jsonl"
    return recorded_session(path, CALLS)


def mcp_verify(recording: Path, variant: str, *options: str) -> subprocess.CompletedProcess[str]:
    return run_cli(
        "mcp-verify",
        str(recording),
        *options,
        "--",
        *SERVER_COMMAND,
        env=environment(COLUMNS="300", GOLEM_TEST_SERVER_VARIANT=variant),
        timeout=120,
    )


def row(output: str, tool: str) -> str:
    return next(line for line in output.splitlines() if line.startswith(tool))


def test_a_call_that_sends_another_calls_request_is_the_one_named(recording: Path) -> None:
    # create_layer now lists the layers first: the recording has scene.list_layers only under
    # the list_layers call, whose answer create_layer must not take.
    done = mcp_verify(recording, "lists-first")
    assert done.returncode == 1, done.stdout + done.stderr
    created = row(done.stdout, "create_layer")
    assert "differs" in created
    assert "sent scene.list_layers {}" in created
    assert "the recorded call never sent scene.list_layers (recorded under #" in created
    assert "list_layers)" in created
    # list_layers got its own recorded answer: it matches.
    assert "match" in row(done.stdout, "list_layers")
    assert "1 of 2 tool calls differ: create_layer" in done.stdout


def test_a_build_that_sends_a_request_never_recorded_fails(recording: Path) -> None:
    # list_layers now deletes an object first and ignores the failure: its result is as
    # recorded, but against Rhino the object would be gone.
    done = mcp_verify(recording, "deletes-first")
    assert done.returncode == 1, done.stdout + done.stderr
    listed = row(done.stdout, "list_layers")
    assert "differs" in listed and "sent scene.delete_objects" in listed
    assert "match" in row(done.stdout, "create_layer")
    assert "the stand-in had no recorded answer for" in done.stdout
    said = next(line for line in done.stdout.splitlines() if "list_layers {} sent" in line)
    assert "scene.delete_objects" in said and "eb1167b3" in said
    assert "1 of 2 tool calls differ: list_layers" in done.stdout


def test_json_names_the_call_method_and_params_of_each_miss(recording: Path) -> None:
    done = mcp_verify(recording, "deletes-first", "--json")
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert report["ok"] is False
    assert report["differing"] == ["list_layers"]
    (miss,) = report["standin_misses"]
    assert miss["method"] == "scene.delete_objects"
    assert miss["params"] == {"guids": ["eb1167b3-67a9-4378-bc65-c1e582e2e662"]}
    assert miss["tool_call"]["tool"] == "list_layers"
    assert miss["tool_call"]["arguments"] == {}
    check = next(c for c in report["checks"] if c["tool"] == "list_layers")
    assert check["number"] == miss["tool_call"]["number"]
    assert check["ok"] is False
    assert "scene.delete_objects" in check["sent_unrecorded"][0]


def test_the_same_build_still_matches(recording: Path) -> None:
    done = mcp_verify(recording, "")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "all 2 tool calls match" in done.stdout


def test_a_request_recorded_without_an_answer_is_said_so(recording: Path, tmp_path: Path) -> None:
    # The recording holds list_layers' scene.list_layers with no answer (dropped, never
    # sent): the same build sends it, and the call is blamed for a request it did send.
    lines = recording.read_text(encoding="utf-8").splitlines()
    events = [json.loads(line) for line in lines]
    asked = next(e for e in events if e.get("method") == "scene.list_layers" and e.get("dir"))
    conn, n = asked["conn"], asked["n"]

    def answer_of_it(event: dict[str, object]) -> bool:
        if event.get("conn") != conn:
            return False
        if event.get("kind") == "frame":
            return event.get("dir") == "s2c" and event.get("n") == n
        return event.get("kind") == "exchange" and event.get("req") == n

    cut = tmp_path / "cut.jsonl"
    kept = [line for line, event in zip(lines, events) if not answer_of_it(event)]
    assert len(kept) == len(lines) - 2
    cut.write_text("\n".join(kept) + "\n", encoding="utf-8")
    done = mcp_verify(cut, "")
    assert done.returncode == 1, done.stdout + done.stderr
    listed = row(done.stdout, "list_layers")
    assert "differs" in listed and "sent scene.list_layers {}" in listed
    assert "recorded scene.list_layers on main (#" in listed
    assert "has no answer in the recording to serve" in listed
    assert "never sent" not in done.stdout
    assert "match" in row(done.stdout, "create_layer")
