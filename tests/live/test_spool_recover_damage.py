"""``golem-proxy recover`` on spools that do not decode to their end, recordings whose header
the kill tore, and a killed session whose last answer was cut: it never loses REC nor its
spool, says in one line where and why it stopped, and records what the client saw. The spools
are a real killed session's (the real command line, loopback sockets), then damaged here."""

from __future__ import annotations

import os
import pickle
import re
import resource
import socket
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from bench.robustness.proxy_cli import ROOT
from golem_core.profiles import GOLEM
from golem_proxy.live.handoff import COUNT_KINDS, HEADER, Kind
from golem_proxy.live.handoff_source import KILLED
from golem_proxy.live.spool_header import read_header
from golem_proxy.live.spool_place import SPOOL_DIR_ENV
from golem_proxy.recording.format import read_recording
from tests.live.observer_child_helpers import golem_calls, observed_proxy, wait_for
from tests.live.test_spool_recover import _calls, _golem, _kill_everything

BLOB = "z" * (2 * 1024 * 1024)


def _killed_session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, bytes]:
    """A session killed after 20 small calls and one of 2 MiB: its REC and spool's bytes (the
    spool then removed, for each test to write its own). REC as the kill left it is kept as
    ``killed.jsonl``."""
    monkeypatch.setenv(SPOOL_DIR_ENV, "beside")  # a regular file beside REC
    record = tmp_path / "s.jsonl"
    calls = [*_calls(20), {"id": 99, "method": "echo", "params": {"blob": BLOB}}]
    with observed_proxy(record, "--observer-spool") as cli:
        golem_calls(cli.port, calls)
        # Every answer recorded, so the spool is the whole session's, whatever the moment of
        # the kill: these tests are about damage, not about that moment.
        wait_for(lambda: _recorded(record) == len(calls), what="every call recorded")
        _kill_everything(cli.process.pid)
        cli.process.communicate()
    spool = Path(f"{record}.spool")
    data = spool.read_bytes()
    spool.unlink()
    (tmp_path / "killed.jsonl").write_bytes(record.read_bytes())
    # The recording as it stood when the spool began: decoding the spool is all there is.
    record.write_bytes(record.read_bytes()[: _start_and_recorded(data)[1]])
    return record, data


def _recorded(record: Path) -> int:
    """Exchanges whose line is in the recording now (counted without parsing a line the
    writer may be in the middle of)."""
    return record.read_bytes().count(b'"kind":"exchange"')


def _start_and_recorded(data: bytes) -> tuple[int, int]:
    fd = os.memfd_create("spool")
    try:
        os.write(fd, data)
        header = read_header(fd)
    finally:
        os.close(fd)
    assert header.recorded is not None
    return header.records_start, header.recorded


def _records(data: bytes) -> list[tuple[int, Kind, int, int]]:
    """Each record's (offset, kind, direction, data length)."""
    found = []
    at = _start_and_recorded(data)[0]
    while at + HEADER.size <= len(data):
        kind, _, direction, _, length = HEADER.unpack_from(data, at)
        size = 0 if kind in COUNT_KINDS else length
        if at + HEADER.size + size > len(data):
            break
        found.append((at, Kind(kind), direction, size))
        at += HEADER.size + size
    return found


def _ids(path: Path) -> list[object]:
    return [e.request.message.id for e in read_recording(str(path)).exchanges()]


def test_a_bad_record_midway_leaves_rec_and_spool_and_recovers_what_precedes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record, data = _killed_session(tmp_path, monkeypatch)
    rec_bytes = record.read_bytes()
    middle = _records(data)[len(_records(data)) // 3][0]
    bad = pickle.dumps(42)
    damaged = data[:middle] + HEADER.pack(Kind.EVENT, 1, 0, 0.5, len(bad)) + bad + data[middle:]
    spool = Path(f"{record}.spool")
    spool.write_bytes(damaged)

    done = _golem("recover", str(record), cwd=tmp_path)

    assert done.returncode == 2, done
    said = done.stderr.strip().splitlines()
    assert len(said) == 1, said
    assert f"{spool}: decoding stopped before its end: the record at offset {middle}" in said[0]
    assert "its data is of type int, not what EVENT carries" in said[0]
    assert record.read_bytes() == rec_bytes  # untouched
    assert spool.read_bytes() == damaged
    recovered = tmp_path / "s.recovered.jsonl"
    assert 0 < len(_ids(recovered)) < 21
    assert f"{recovered}" in said[0]
    last = read_recording(str(recovered)).events[-1]
    assert f"offset {middle}" in getattr(last, "reason", ""), last


@pytest.mark.parametrize(
    "damage",
    ["bad-kind", "record-4G", "opened-empty", "setup-not-a-pickle", "setup-an-int", "cut-at-5"],
)
def test_crafted_spools_give_one_line_naming_the_spool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: str
) -> None:
    record, data = _killed_session(tmp_path, monkeypatch)
    start, _ = _start_and_recorded(data)
    if damage == "cut-at-5":  # a header line there: a cut at 5 bytes is inside it
        record.write_bytes((tmp_path / "killed.jsonl").read_bytes())
    header, records = data[:start], data[start:]
    setup = header[28:]

    def with_setup(new: bytes) -> bytes:
        return header[:24] + struct.pack("!I", len(new)) + new + records

    crafted = {
        "bad-kind": header + HEADER.pack(99, 1, 0, 1.0, 3) + b"abc" + records,
        "record-4G": header + HEADER.pack(Kind.DATA, 1, 0, 1.0, 2**32 - 1) + records,
        "opened-empty": header + HEADER.pack(Kind.OPENED, 9, 0, 0.5, 0) + records,
        "setup-not-a-pickle": with_setup(b"\0\1garbage"),
        "setup-an-int": with_setup(pickle.dumps(42)),
        "cut-at-5": header[:16] + struct.pack("!Q", 5) + header[24:28] + setup + records,
    }[damage]
    spool = Path(f"{record}.spool")
    spool.write_bytes(crafted)
    before = record.read_bytes()

    done = _golem("recover", str(record), cwd=tmp_path)

    assert done.returncode == 2, done
    said = done.stderr.strip().splitlines()
    assert len(said) == 1, said
    assert said[0].startswith(f"golem-proxy: {spool}: "), said
    assert "internal error" not in said[0] and ".recovering" not in said[0]
    if damage in ("bad-kind", "record-4G", "opened-empty"):
        assert f"the record at offset {start} does not read" in said[0], said
    assert record.read_bytes() == before
    assert spool.read_bytes() == crafted


def test_a_torn_header_is_rebuilt_from_a_spool_of_the_whole_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record, data = _killed_session(tmp_path, monkeypatch)
    assert _start_and_recorded(data)[1] == 0  # the spool holds the session from its start
    record.write_bytes(b'{"format":"golem-proxy-recording","vers')  # what the kill left
    Path(f"{record}.spool").write_bytes(data)

    done = _golem("recover", str(record), cwd=tmp_path)

    assert done.returncode == 0, done
    assert _ids(record) == [*range(20), 99]


def test_an_answer_cut_by_the_kill_is_truncated_and_its_connection_closed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record, data = _killed_session(tmp_path, monkeypatch)
    answer = [r for r in _records(data) if r[1] is Kind.DATA and r[2] == 1 and r[3] > 60000]
    # The spool as a kill halfway through the 2 MiB answer left it.
    cut = answer[len(answer) // 2][0]
    sent = sum(size for at, _, _, size in answer if at < cut)
    Path(f"{record}.spool").write_bytes(data[:cut])

    done = _golem("recover", str(record), cwd=tmp_path)

    assert done.returncode == 0, done
    events = read_recording(str(record)).events
    closes = [e for e in events if getattr(e, "reason", "").startswith(KILLED)]
    assert len(closes) == 1, closes
    # The spool took each chunk before the client did: the last may not have reached it.
    doubt = re.fullmatch(
        rf"{KILLED}; the spool's last (\d+) bytes to the client.* may not have been sent on",
        closes[0].reason,
    )
    assert doubt is not None, closes[0].reason
    assert 0 < int(doubt[1]) <= sent
    shown = _golem("show", str(record), cwd=tmp_path)
    assert "pending" not in shown.stdout, shown.stdout
    assert "truncated" in shown.stdout, shown.stdout
    stats = _golem("stats", str(record), cwd=tmp_path)
    assert " pend" not in stats.stdout, stats.stdout
    assert sent > 0


def test_recover_memory_stays_bounded_by_a_huge_frame(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record, data = _killed_session(tmp_path, monkeypatch)
    start, _ = _start_and_recorded(data)
    first = next(r for r in _records(data) if r[1] is Kind.DATA)
    conn, t = HEADER.unpack_from(data, first[0])[1], HEADER.unpack_from(data, first[0])[3]
    chunk = b"x" * (1 << 20)
    with open(f"{record}.spool", "wb") as spool:
        spool.write(data[: first[0]])
        for n in range(128):  # 128 MiB of a frame that claims 1 GiB and never ends
            body = struct.pack("!I", 1 << 30) + chunk[4:] if n == 0 else chunk
            spool.write(HEADER.pack(Kind.DATA, conn, 0, t + n / 1000, len(body)) + body)
    assert start < first[0]
    measure = (
        "import resource, subprocess, sys; "
        "subprocess.run([sys.executable, '-m', 'golem_proxy', 'recover', sys.argv[1]], check=True);"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    done = subprocess.run(
        [sys.executable, "-c", measure, str(record)],
        cwd=tmp_path,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done
    peak_mib = int(done.stdout.split()[-1]) // 1024
    assert peak_mib < 100, peak_mib
    assert resource  # the parent's own rusage is not what is measured


def test_the_record_torn_by_the_kill_gives_the_bytes_it_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record, data = _killed_session(tmp_path, monkeypatch)
    answer = [r for r in _records(data) if r[1] is Kind.DATA and r[2] == 1]
    large = [r for r in answer if r[3] > 60000]
    # The spool as a kill in the middle of writing a record of the 2 MiB answer left it.
    at, _, _, size = large[len(large) // 2]
    torn = size // 2
    Path(f"{record}.spool").write_bytes(data[: at + HEADER.size + torn])

    done = _golem("recover", str(record), cwd=tmp_path)

    assert done.returncode == 0, done
    events = read_recording(str(record)).events
    closes = [e for e in events if getattr(e, "reason", "").startswith(KILLED)]
    assert len(closes) == 1, closes
    # Every byte of the answer the spool holds, those of the torn record included: they are
    # the stream's, in order, as far as they go.
    before = sum(length for start, _, _, length in answer if start < at)
    assert closes[0].bytes_s2c == before + torn, (closes[0].bytes_s2c, before, torn)
    shown = _golem("show", str(record), cwd=tmp_path)
    assert "truncated" in shown.stdout, shown.stdout  # the frame is still cut short
    assert "pending" not in shown.stdout, shown.stdout


@pytest.mark.parametrize(
    ("said", "refused"),
    [
        (b"0 client gone", "is not '<size> <why>'"),
        (b"9" * 5000 + b" client gone", "is not '<size> <why>'"),
        ("\u00b2 client gone".encode(), "is not '<size> <why>'"),
        (b"5000000 client gone", "takes back 5000000 bytes, more than the"),
    ],
    ids=["size-0", "5000-digits", "superscript-two", "more-than-carried"],
)
def test_an_undelivered_last_record_the_proxy_never_writes_is_refused_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, said: bytes, refused: str
) -> None:
    """An ``UNDELIVERED_LAST`` after the spool's last answer that the forwarding process never
    writes (a size of 0, which took the doubt away unsaid; thousands of digits, which gave
    Python's own "Exceeds the limit (4300 digits)"; a digit ``int`` reads that is not ASCII;
    more bytes than the connection carried that way, which the close repeated) stops the
    decoding at it, one line naming it: the recording and the spool are left as they were."""
    monkeypatch.setenv(SPOOL_DIR_ENV, "beside")
    record = tmp_path / "s.jsonl"
    with (
        observed_proxy(record, "--observer-spool") as cli,
        socket.create_connection(("127.0.0.1", cli.port), timeout=20) as sock,
    ):
        sock.sendall(GOLEM.encode({"id": 1, "method": "echo", "params": {"a": "b" * 1000}}))
        got = b""
        while len(got) < 1000:
            got += sock.recv(65536)
        # Killed with the connection open: the record names a connection decoded on.
        wait_for(lambda: _recorded(record) == 1, what="the call recorded")
        _kill_everything(cli.process.pid)
        cli.process.communicate()
    rec_bytes = record.read_bytes()
    spool = Path(f"{record}.spool")
    data = spool.read_bytes()
    last = [at for at, kind, _, _ in _records(data) if kind is Kind.DATA][-1]
    conn = HEADER.unpack_from(data, last)[1]
    crafted = data + HEADER.pack(Kind.UNDELIVERED_LAST, conn, 1, 9.0, len(said)) + said
    spool.write_bytes(crafted)

    done = _golem("recover", str(record), cwd=tmp_path)

    assert done.returncode == 2, done
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert f"the record at offset {len(data)} does not read: UNDELIVERED_LAST" in lines[0]
    assert refused in lines[0], lines[0]
    assert "4300" not in lines[0] and "ValueError" not in lines[0], lines[0]
    assert record.read_bytes() == rec_bytes
