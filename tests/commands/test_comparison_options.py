"""The comparison options ``diff``, ``verify`` and ``mcp-verify`` share refuse what would
compare otherwise than asked, silently: a negative tolerance, an ``--ignore`` path that starts
at no member of an answer (it would leave nothing out)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli_helpers import run_cli
from tests.support.trace_builder import golem_session, write_recording


@pytest.mark.parametrize(
    ("option", "said"),
    [
        (("--float-tolerance", "-1"), "'-1' is below 0"),
        (("--ignore", "foo"), "bad --ignore: 'foo' starts at 'foo', no member of an answer"),
        (("--ignore", "scene.create_layer:name"), "starts at 'name', no member of an answer"),
    ],
)
def test_diff_refuses_an_option_that_would_compare_nothing_as_asked(
    tmp_path: Path, option: tuple[str, str], said: str
) -> None:
    trace = tmp_path / "a.jsonl"
    trace.write_bytes(write_recording(golem_session().events))
    done = run_cli("diff", str(trace), str(trace), *option)
    assert done.returncode == 2, done.stdout + done.stderr
    assert said in done.stderr


def test_paths_at_the_envelope_are_taken(tmp_path: Path) -> None:
    trace = tmp_path / "a.jsonl"
    trace.write_bytes(write_recording(golem_session().events))
    for path in ("params.x", "result.x", "error.message", "id", "*.guid", "m.x:result.y"):
        done = run_cli("diff", str(trace), str(trace), "--ignore", path)
        assert done.returncode == 0, (path, done.stdout + done.stderr)
