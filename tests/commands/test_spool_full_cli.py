"""A recording whose spool (``--observer-spool``) filled up, as the views read it: the
``spool-full`` line is a note on stderr, once, naming when, and not a gap (nothing is
missing around it: `check` passes, the rows are those of the exchanges alone)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from golem_proxy.events import SessionEnded, SpoolFull
from tests.support.cli_helpers import run_main
from tests.support.restarts import call, closed, opened
from tests.support.sessions import write_recording

NOTE = (
    "at 0.350 s the spool was full (--spool-limit 16 MiB) and the session went on without it: "
    "up to this point it held everything forwarded (a kill -9 would have lost no line, "
    "golem-proxy recover rebuilds them); from this point the session went on through the pipe "
    "without waiting while the recording caught up with what the spool held (the spool stays "
    "until then; a kill -9 meanwhile loses what was forwarded after this point), then "
    "forwarding waits for the recording again and a kill -9 loses at most ~100 ms of lines"
)


def _recording(path: Path) -> None:
    events = [opened(1, 0.1), *call(1, 0, 0.2), SpoolFull(t=0.35, limit=16 * 1024 * 1024)]
    events += [*call(1, 1, 0.4), closed(1, 0.5), SessionEnded(t=0.6, reason="stopped by SIGINT")]
    write_recording(str(path), events)


@pytest.mark.parametrize("command", ["show", "stats", "check", "export --format jsonl -o {out}"])
def test_every_view_says_when_the_spool_was_full_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    path = tmp_path / "full.jsonl"
    _recording(path)
    args = command.format(out=tmp_path / "out.jsonl").split()
    code, _, err = run_main(capsys, *args, str(path))
    assert code == 0, err
    notes = [line for line in err.splitlines() if line.startswith("note: ")]
    assert notes == [f"note: {path}: {NOTE}"], err


def test_the_rows_are_the_exchanges_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "full.jsonl"
    _recording(path)
    code, out, _ = run_main(capsys, "show", str(path), "--json")
    assert code == 0
    assert [json.loads(line)["status"] for line in out.splitlines()] == ["ok", "ok"]
