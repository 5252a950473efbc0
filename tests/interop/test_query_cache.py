"""``query --cache DIR``: each recording's rows are kept and read again while the recording
stays the same; a recording that changes is read again, and a bad folder is one line."""

from __future__ import annotations

import json
import os
from pathlib import Path

from golem_proxy.recording.format import RecordingWriter
from tests.support.cli_helpers import run_cli
from tests.support.sessions import SessionBuilder, golem_header

from .query_helpers import ALL_ROWS, SAMPLES, fleet, query_lines


def cache_files(cache: Path) -> dict[str, tuple[int, int]]:
    """Each file in the cache folder, by name: its inode and modification time."""
    return {path.name: (path.stat().st_ino, path.stat().st_mtime_ns) for path in cache.iterdir()}


def test_cached_rows_are_the_rows_and_are_reused(tmp_path: Path) -> None:
    traces = fleet(tmp_path, 1)
    cache = tmp_path / "cache"
    plain = query_lines(ALL_ROWS, *traces)
    first = query_lines(ALL_ROWS, *traces, "--cache", str(cache), "--jobs", "2")
    assert first == plain
    kept = cache_files(cache)
    assert len(kept) == len(traces) and all(name.endswith(".rows.jsonl") for name in kept)
    assert oct(cache.stat().st_mode & 0o777) == "0o700"
    second = query_lines(ALL_ROWS, *traces, "--cache", str(cache), "--jobs", "1")
    assert second == plain
    assert cache_files(cache) == kept  # nothing read again, nothing rewritten


def test_a_changed_recording_is_read_again(tmp_path: Path) -> None:
    traces = fleet(tmp_path, 1)
    cache = tmp_path / "cache"
    count = "SELECT trace, count(*) AS flows FROM flows GROUP BY trace ORDER BY trace"
    before = [json.loads(line) for line in query_lines(count, *traces, "--cache", str(cache))]
    kept = cache_files(cache)
    changed = Path(traces[0])
    # One more request, never answered: a flow more, with the file's size and time new.
    lines = changed.read_text(encoding="utf-8").splitlines(keepends=True)
    frame = next(line for line in lines if '"kind":"frame"' in line and '"dir":"c2s"' in line)
    data = json.loads(frame)
    seq = json.loads(lines[-1])["seq"] + 1  # the next line's number: no line lost
    data.update(seq=seq, n=10**6, t=data["t"] + 1000)  # keys kept in place: msg stays last
    data["msg"]["id"] = "again"
    if "id" in data:
        data["id"] = "again"
    line = json.dumps(data, separators=(",", ":"))  # the writer's layout
    changed.write_text("".join(lines) + line + "\n", encoding="utf-8")
    os.utime(changed, ns=(10**18, 10**18))
    after = [json.loads(line) for line in query_lines(count, *traces, "--cache", str(cache))]
    assert after[0]["flows"] == before[0]["flows"] + 1 and after[1:] == before[1:]
    now = cache_files(cache)
    assert len(now) == len(kept) + 1 and all(now[name] == kept[name] for name in kept)


def test_a_cache_folder_that_cannot_be_one_is_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    for cache in (blocker, blocker / "below"):
        done = run_cli("query", "SELECT 1", str(SAMPLES[0]), "--cache", str(cache))
        assert done.returncode == 2, done
        lines = done.stderr.splitlines()
        assert len(lines) == 1, done.stderr
        assert lines[0].startswith(f"golem-proxy: cannot use {cache} as the cache folder ("), lines


def test_a_link_planted_in_the_cache_is_not_read(tmp_path: Path) -> None:
    traces = fleet(tmp_path, 1)[:1]
    cache = tmp_path / "cache"
    plain = query_lines(ALL_ROWS, *traces, "--cache", str(cache))
    (kept,) = cache.iterdir()
    planted = tmp_path / "planted.jsonl"
    planted.write_text('{"trace": "planted", "n": 1}\n', encoding="utf-8")
    kept.unlink()
    kept.symlink_to(planted)
    assert query_lines(ALL_ROWS, *traces, "--cache", str(cache)) == plain
    assert not kept.is_symlink()  # read again and written in its place


def test_rows_longer_than_the_engines_default_are_read_fresh_and_from_the_cache(
    tmp_path: Path,
) -> None:
    """The engine's buffers are sized by the longest row written (`flow_table.rows_relation`):
    a 34 MiB answer, past twice its 16 MiB default (what it reads without being told), is
    read whole, fresh and from the cache, whose file of rows says how long its longest row is
    beside it. Without that, the cached rows are read as short ones and refused in one line."""
    size = 34 * 1024 * 1024
    trace = tmp_path / "capture.jsonl"
    s = SessionBuilder(check=False)
    s.open(1, 0.0)
    request = s.request(1, "viewport.capture", {}, 0.1)
    s.respond(request, 0.2, result={"image": "A" * size})
    writer = RecordingWriter.create(str(trace), golem_header())
    for event in s.events:
        writer.write(event)
    writer.close()
    cache = tmp_path / "cache"
    sql = "SELECT n, length(result->>'image') AS size FROM flows"
    expected = [{"n": 1, "size": size}]
    assert [json.loads(line) for line in query_lines(sql, str(trace))] == expected
    for _ in range(2):  # written to the cache, then read from it
        found = query_lines(sql, str(trace), "--cache", str(cache))
        assert [json.loads(line) for line in found] == expected
    (said,) = cache.glob("*.notes.json")
    assert json.loads(said.read_text())["longest"] > size
    said.unlink()
    done = run_cli("query", sql, str(trace), "--cache", str(cache))
    assert done.returncode != 0 and len(done.stderr.splitlines()) == 1, done.stderr
    assert "maximum_object_size" in done.stderr


def test_a_fifo_planted_beside_the_cached_rows_is_not_read(tmp_path: Path) -> None:
    """What is said of the rows (``.notes.json``) is read only from a regular file: a FIFO in
    its place would block the query forever, a device feed it without end."""
    traces = fleet(tmp_path, 1)[:1]
    cache = tmp_path / "cache"
    plain = query_lines(ALL_ROWS, *traces, "--cache", str(cache))
    (kept,) = cache.glob("*.rows.jsonl")
    notes = kept.with_name(kept.name[: -len(".rows.jsonl")] + ".notes.json")
    if notes.exists():
        notes.unlink()
    os.mkfifo(notes)
    done = run_cli("query", ALL_ROWS, *traces, "--cache", str(cache), "--json", timeout=30)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == plain
