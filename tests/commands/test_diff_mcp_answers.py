"""``golem-proxy diff A B`` of two ``golem-proxy mcp`` sessions compares what the server told
the model (``initialize``, ``tools/list`` and the other listings) as ``mcp-verify`` does: a
build that dropped a tool, changed a parameter's type or reworded a description the model
reads differs though every tool call matches (diff said ``no difference``, exit 0)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any, Optional

import pytest

from tests.mcp_layer.mcp_helpers import environment, listing_server, recorded_listing
from tests.support.cli_helpers import run_cli

CALLS = [("get_info", {"guid": "0b5c6f1e-8d1c-4c55-9a3e-2f7b1d6c9e01"})]
CREATE = {"name": "create_layer", "description": "Make a layer.", "inputSchema": {"type": "object"}}


def get_info(guid_type: str = "string", description: str = "What an object is.") -> dict[str, Any]:
    schema = {"type": "object", "properties": {"guid": {"type": guid_type}}}
    return {"name": "get_info", "description": description, "inputSchema": schema}


def recorded(
    record: Path,
    tools: list[dict[str, Any]],
    server_info: Optional[dict[str, Any]] = None,
    **options: Any,
) -> Path:
    """A session of ``CALLS`` to a server listing ``tools`` (from a file: a listing may be
    larger than one argument may be)."""
    source = record.with_suffix(".py")
    source.write_text(listing_server(tools, server_info))
    return recorded_listing(record, f"exec(open({str(source)!r}).read())", CALLS, **options)


def diff(*args: object) -> subprocess.CompletedProcess[str]:
    return run_cli("diff", *map(str, args), env=environment(COLUMNS="250"))


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("answers")
    return recorded(folder / "a.jsonl", [CREATE, get_info()], {"name": "t", "version": "1.0"})


def test_a_tool_gone_and_a_parameter_retyped_differ(reference: Path, tmp_path: Path) -> None:
    b = recorded(tmp_path / "b.jsonl", [get_info("integer")], {"name": "t", "version": "1.0"})
    done = diff(reference, b)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "what the server told the model" in done.stdout
    assert "tools/list changed" in done.stdout
    assert "result.tools.create_layer " in done.stdout
    assert "result.tools.get_info.inputSchema.properties.guid.type" in done.stdout
    assert "diff: 1 of 2 answers of what the server told the model differ" in done.stdout
    # The tool calls themselves are alike.
    assert "diff: 1 tool call, no difference" in done.stdout
    report = json.loads(diff("--json", reference, b).stdout)["server_answers"]
    assert report["compared"] == 2
    assert [entry["method"] for entry in report["differing"]] == ["tools/list"]
    assert report["differing"][0]["differences"] == [
        {
            "path": "result.tools.create_layer",
            "kind": "missing",
            "recorded": CREATE,
        },
        {
            "path": "result.tools.get_info.inputSchema.properties.guid.type",
            "kind": "changed",
            "recorded": "string",
            "live": "integer",
        },
    ]


def test_a_description_changed_differs_unless_ignored(reference: Path, tmp_path: Path) -> None:
    tools = [CREATE, get_info(description="Anything about an object.")]
    b = recorded(tmp_path / "b.jsonl", tools, {"name": "t", "version": "1.0"})
    done = diff(reference, b)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "result.tools.get_info.description" in done.stdout
    assert "'What an object is.'" in done.stdout
    ignored = diff("--ignore", "tools/list:result.tools.get_info.description", reference, b)
    assert ignored.returncode == 0, ignored.stdout + ignored.stderr
    assert "diff: 2 answers of what the server told the model, no difference" in ignored.stdout


def test_only_the_server_s_version_changed_is_told(reference: Path, tmp_path: Path) -> None:
    b = recorded(tmp_path / "b.jsonl", [CREATE, get_info()], {"name": "t", "version": "2.0"})
    done = diff(reference, b)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (
        "initialize result.serverInfo.version: '1.0' → '2.0' (told, no difference)"
    ) in done.stdout
    assert "diff: 2 answers of what the server told the model, no difference" in done.stdout
    report = json.loads(diff("--json", reference, b).stdout)["server_answers"]
    assert report["differing"] == []
    assert report["told"] == [
        {
            "method": "initialize",
            "differences": [],
            "notes": [
                {
                    "path": "result.serverInfo.version",
                    "kind": "changed",
                    "recorded": "1.0",
                    "live": "2.0",
                }
            ],
        }
    ]


def test_the_same_answers_say_only_so(reference: Path, tmp_path: Path) -> None:
    b = recorded(tmp_path / "b.jsonl", [CREATE, get_info()], {"name": "t", "version": "1.0"})
    done = diff(reference, b)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "what the server told the model\n" not in done.stdout
    assert "diff: 2 answers of what the server told the model, no difference" in done.stdout
    report = json.loads(diff("--json", reference, b).stdout)["server_answers"]
    assert report == {"compared": 2, "differing": [], "told": []}


def test_a_listing_asked_in_one_session_only_is_said(reference: Path, tmp_path: Path) -> None:
    b = recorded(
        tmp_path / "b.jsonl",
        [CREATE, get_info()],
        {"name": "t", "version": "1.0"},
        asked=("tools/list", "prompts/list"),
    )
    done = diff(reference, b)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"prompts/list only in {b}" in done.stdout
    assert "diff: 1 of 3 answers of what the server told the model differ" in done.stdout


def test_a_path_one_recording_redacted_is_no_difference(reference: Path, tmp_path: Path) -> None:
    tools = [CREATE, get_info(description="Anything about an object.")]
    rule = ("--redact", "tools/list:result.tools.*.description")
    b = recorded(tmp_path / "b.jsonl", tools, {"name": "t", "version": "1.0"}, options=rule)
    assert "Anything about" not in b.read_text()
    for pair in ((reference, b), (b, reference)):
        done = diff(*pair)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "answers of what the server told the model, no difference" in done.stdout


def test_listings_kept_by_their_digest_compare_by_it(tmp_path: Path) -> None:
    """Over ``--observe-frame-limit`` (1 MiB) a listing is kept as its size and SHA-256: the
    same listing matches, whole in one recording or kept so in both; a longer one differs."""
    big = [CREATE, get_info(description="x" * (1024 * 1024))]
    limit = {"options": ("--observe-frame-limit", "1")}
    whole = recorded(tmp_path / "whole.jsonl", big)
    kept = recorded(tmp_path / "kept.jsonl", big, **limit)
    assert '"reason":"frame-too-large"' in kept.read_text()
    for pair in ((whole, kept), (kept, whole)):
        done = diff(*pair)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "diff: 2 answers of what the server told the model, no difference" in done.stdout
    longer = [CREATE, get_info(description="x" * (1024 * 1024 + 1))]
    other = recorded(tmp_path / "other.jsonl", longer, **limit)
    done = diff(kept, other)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "tools/list changed" in done.stdout and "size/sha256" in done.stdout
