"""A spool whose file system fills up (spool.py, `SpoolWriter._ended`), at the record level:
the spool is cut back to its last whole record and the records go on through the doorbell's
pipe, led by one ``SPOOL_FULL`` record, in the order they were handed on. The file system's
limit is a file size limit (``RLIMIT_FSIZE``), set in a child process of its own so that no
other file of the test run meets it."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

LIMIT = 4096

_WRITER = textwrap.dedent(
    """
    import json, os, resource, sys
    from golem_proxy.live.handoff import HEADER, Kind
    from golem_proxy.live.handoff_reader import RecordReader
    from golem_proxy.live.spool import SpoolWriter

    limit, short = int(sys.argv[1]), int(sys.argv[2])
    spool = os.open(sys.argv[3], os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    bell_read, bell_write = os.pipe()
    said = []
    writer = SpoolWriter(spool, bell_write, on_full=said.append, backlog=1 << 20)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))
    # The first chunk leaves ``short`` bytes free: the next does not fit, and neither,
    # when ``short`` is under a header's size, does any record after it.
    writer.data(1, 1, 1.0, b"a" * (limit - short - HEADER.size))
    writer.data(1, 0, 2.0, b"the chunk that fills it")
    writer.ring()
    writer.data(1, 1, 3.0, b"after")
    writer.ring()
    resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))

    def records(raw):
        reader = RecordReader()
        reader.receive_data(raw)
        found = []
        while (record := reader.next_record()) is not None:
            found.append([Kind(record.kind).name, bytes(record.data).decode()[:30]])
        return found

    os.lseek(spool, 0, os.SEEK_SET)
    in_spool = records(os.read(spool, 1 << 20))
    os.set_blocking(bell_read, False)
    piped = os.read(bell_read, 1 << 20)
    print(json.dumps({"said": said, "spool": in_spool, "pipe": records(piped.lstrip(b"\\0"))}))
    """
)


@pytest.mark.parametrize("short", [2, 40], ids=["no room for any record", "room for a ring"])
def test_a_spool_that_fills_ends_once_and_its_records_go_on_through_the_pipe_in_order(
    tmp_path: Path, short: int
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _WRITER, str(LIMIT), str(short), str(tmp_path / "s.spool")],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["said"] == ["its file system is full"]
    assert [kind for kind, _ in seen["spool"]] == ["DATA"], seen
    kinds = [kind for kind, _ in seen["pipe"]]
    assert kinds.count("SPOOL_FULL") == 1 and kinds[0] == "SPOOL_FULL", seen
    chunks = [text for kind, text in seen["pipe"] if kind == "DATA"]
    assert chunks == ["the chunk that fills it", "after"], seen
    # The spool's last whole record ends where the first record in the pipe says.
    assert seen["pipe"][0][1] == str(LIMIT - short), seen
