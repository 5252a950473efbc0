"""``show --catalogue`` on a recording without an MCP layer: each GOLEM flow names the tool(s)
that send its method per the catalogue, marked as a guess; ``~tool`` matches them there.
The real command line on the shipped sample."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.cli_helpers import ROOT, run_cli

SAMPLE = "sample:modelling-session"
CATALOGUE = "golem-3dmcp@9819b31"


def show_json(*args: str) -> list[dict[str, Any]]:
    done = run_cli("show", "--json", *args, SAMPLE)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_each_golem_row_names_its_likely_tool_as_a_guess() -> None:
    done = run_cli("show", "--catalogue", CATALOGUE, SAMPLE)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "likely tool?" in lines[1]
    cells = {line.split()[4]: line.split()[5] for line in lines[3:14]}
    assert cells["scene.create_layer"] == "create_layer?"
    assert cells["viewport.capture"] == "capture_viewport?"
    assert cells["ping"] == "ok"  # no tool sends ping: its row names none
    assert f"a guess, the tool(s) that send the method per the catalogue {CATALOGUE}" in (
        done.stdout
    )
    assert "likely tool?" not in run_cli("show", SAMPLE).stdout  # no catalogue, no guess


def test_show_json_adds_likely_tools_only_with_a_catalogue() -> None:
    plain = show_json()
    assert all("likely_tools" not in flow for flow in plain)
    guessed = {flow["number"]: flow for flow in show_json("--catalogue", CATALOGUE)}
    assert len(guessed) == len(plain)
    likely = {flow["method"]: flow["likely_tools"] for flow in guessed.values()}
    assert likely["ping"] == []
    assert likely["geometry.create_box"] == ["create_box"]
    assert likely["manipulation.move_objects"] == ["move_objects"]
    # The attribution itself stays what the recording says: unknown.
    assert {flow["attribution"] for flow in guessed.values()} == {"unknown"}
    assert {flow["tool_call"] for flow in guessed.values()} == {None}


def test_several_tools_sending_a_method_are_all_named(tmp_path: Path) -> None:
    data = json.loads((ROOT / "docs" / "golem-method-catalogue.json").read_text("utf-8"))
    tools = data["client_methods"]["geometry.create_box"]["tools"]
    tools.append(dict(tools[0], tool="create_cube"))
    tools.append(dict(tools[0]))  # the same tool at a second place is still one tool
    catalogue = tmp_path / "catalogue.json"
    catalogue.write_text(json.dumps(data), "utf-8")
    flows = show_json("--catalogue", str(catalogue), "-f", "~m create_box")
    assert [flow["likely_tools"] for flow in flows] == [["create_box", "create_cube"]] * 2
    done = run_cli("show", "--catalogue", str(catalogue), SAMPLE)
    boxes = [line for line in done.stdout.splitlines() if "geometry.create_box" in line]
    assert len(boxes) == 2
    assert all("create_box?, create_cube?" in line for line in boxes)


def test_tool_filter_matches_the_likely_tools() -> None:
    boxes = show_json("--catalogue", CATALOGUE, "-f", "~tool ^create_box$")
    assert [flow["method"] for flow in boxes] == ["geometry.create_box"] * 2
    capture = show_json("--catalogue", CATALOGUE, "-f", "~tool capture_viewport")
    assert [flow["method"] for flow in capture] == ["viewport.capture"]
    assert show_json("-f", "~tool ^create_box$") == []  # without a catalogue: no guess
    done = run_cli("show", "--catalogue", CATALOGUE, "-f", "~tool box", SAMPLE)
    assert "2 flows matching ~tool box" in done.stdout
    assert "a guess" in done.stdout


def test_a_catalogue_that_cannot_be_read_is_one_line_of_error(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text("{not json", "utf-8")
    for spec in (str(broken), "golem-3dmcp@0000000", str(tmp_path / "absent.json")):
        done = run_cli("show", "--catalogue", spec, SAMPLE)
        assert done.returncode == 2
        assert done.stdout == ""
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
