"""Where ``--observer-spool`` puts a spool's bytes (live/spool_place.py): on a memory file
system, with a link beside the recording to find them by; beside the recording when asked;
and what `recover` and the removal do with a link that names something else. The real
command line and loopback sockets for the session, the module itself for the link cases."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from golem_core.messages import Response
from golem_proxy.live.spool_place import (
    BESIDE,
    SPOOL_DIR_ENV,
    create_spool,
    remove_spool,
    spool_dir,
)
from tests.live.observer_child_helpers import golem_calls, observed_proxy, wait_for
from tests.live.test_spool_recover import _calls, _golem


def test_the_spool_lives_in_the_chosen_place_linked_from_beside_the_recording(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    place = tmp_path / "memory"
    place.mkdir()
    monkeypatch.setenv(SPOOL_DIR_ENV, str(place))
    record = tmp_path / "session.jsonl"
    link = Path(f"{record}.spool")
    with observed_proxy(record, "--observer-spool") as cli:
        answers = golem_calls(cli.port, _calls(30))
        wait_for(link.is_symlink, what="the spool's link")
        data = Path(os.readlink(link))
        assert data.parent == place and data.name.startswith("golem-proxy-")
        assert stat.S_IMODE(data.stat().st_mode) == 0o600
        wait_for(lambda: data.stat().st_size > 0, what="records in the spool")
        cli.stop()
    assert cli.process.returncode == 0, cli.stderr
    assert [a.id for a in answers if isinstance(a, Response)] == list(range(30))
    # A clean end removes both.
    assert not os.path.lexists(link) and list(place.iterdir()) == []


def test_beside_puts_the_spool_next_to_the_recording(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SPOOL_DIR_ENV, BESIDE)
    record = tmp_path / "session.jsonl"
    link = Path(f"{record}.spool")
    with observed_proxy(record, "--observer-spool") as cli:
        golem_calls(cli.port, _calls(5))
        wait_for(link.exists, what="the spool")
        assert not link.is_symlink()
        cli.stop()
    assert cli.process.returncode == 0, cli.stderr
    assert not link.exists()


def test_recover_says_when_the_spools_bytes_are_gone(tmp_path: Path) -> None:
    record = tmp_path / "session.jsonl"
    record.write_text(
        '{"format":"golem-proxy-recording","version":2,"profile":"golem","routes":[],'
        '"started_at":"2024-01-01T00:00:00.000000Z","clock":"t","tool":"t","redact":[]}\n'
    )
    gone = tmp_path / "memory" / "golem-proxy-x.spool"
    os.symlink(gone, f"{record}.spool")
    done = _golem("recover", str(record), cwd=tmp_path)
    assert done.returncode != 0
    assert "which is gone" in done.stderr and "nothing to recover" in done.stderr, done.stderr


def test_removing_a_link_made_by_hand_keeps_the_file_it_names(tmp_path: Path) -> None:
    precious = tmp_path / "notes.txt"
    precious.write_text("keep me")
    link = tmp_path / "session.jsonl.spool"
    os.symlink(precious, link)
    remove_spool(str(link))
    assert precious.read_text() == "keep me" and not os.path.lexists(link)


def test_a_spool_link_is_never_made_over_an_existing_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    place = tmp_path / "memory"
    place.mkdir()
    monkeypatch.setenv(SPOOL_DIR_ENV, str(place))
    link = tmp_path / "session.jsonl.spool"
    link.write_text("someone else's")
    with pytest.raises(FileExistsError):
        create_spool(str(link))
    assert link.read_text() == "someone else's" and list(place.iterdir()) == []
    stream, data = create_spool(str(link), overwrite=True)
    stream.close()
    assert data is not None and os.readlink(link) == data
    remove_spool(str(link), data)
    assert list(place.iterdir()) == []


def test_a_place_without_room_for_the_limit_is_passed_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(SPOOL_DIR_ENV, raising=False)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    assert spool_dir(need=0) == str(tmp_path)
    # No file system here has an exbibyte free: beside the recording, not a spool that fills
    # its place and stops observation.
    assert spool_dir(need=1 << 60) is None
