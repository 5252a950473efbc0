"""A closed output (``golem-proxy … | head -1``) ends every command the same way: quietly,
exit 0 (issue 22 point 13)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support.cli_helpers import ROOT

SAMPLE = str(ROOT / "recordings" / "error-session.jsonl")

COMMANDS = [
    ("show", SAMPLE),
    ("show", "--json", SAMPLE),
    ("show", "-n", "1", SAMPLE),
    ("export", SAMPLE, "--format", "jsonl"),
    ("stats", SAMPLE),
    ("stats", "--json", SAMPLE),
    ("check", SAMPLE),
    ("samples",),
]

# A hundred rows per flow, some 70 kB or more in every mode: more than an output buffer holds,
# so the printer itself meets the closed pipe (a short result would only fail at the last flush).
MANY_ROWS = "SELECT trace, n, method FROM flows, range(100)"
QUERIES = [
    ("query", MANY_ROWS, SAMPLE, *mode, *jobs)
    for mode in ((), ("--csv",), ("--json",))
    for jobs in ((), ("--jobs", "1"))
]


def run_into_closed_pipe(*args: str) -> subprocess.CompletedProcess[str]:
    """Run the command line with stdout a pipe whose reader is already gone: every write
    fails with EPIPE, whatever the timing."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(
            [sys.executable, "-m", "golem_proxy", *args],
            cwd=ROOT,
            env=dict(os.environ, PYTHONPATH=str(ROOT)),
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
    finally:
        os.close(write_end)


@pytest.mark.parametrize("args", COMMANDS + QUERIES, ids=" ".join)
def test_a_closed_output_ends_quietly_with_exit_0(args: tuple[str, ...]) -> None:
    done = run_into_closed_pipe(*args)
    assert done.stderr == ""
    # error-session breaks the contract: check would exit 1 with a reader; the closed output
    # decides first.
    assert done.returncode == 0


def test_head_reads_its_line_and_the_command_exits_0() -> None:
    """What a user types: the first line arrives, then the reader leaves."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    command = [sys.executable, "-m", "golem_proxy", "export", SAMPLE, "--format", "jsonl"]
    with subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as process:
        assert process.stdout is not None and process.stderr is not None
        first = process.stdout.readline()
        process.stdout.close()
        errors = process.stderr.read()
        code = process.wait(timeout=60)
    assert first.startswith(b'{"number": 1')
    assert errors == b""
    assert code == 0


def test_help_documents_the_exit_code() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "golem_proxy", "--help"],
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="200"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "reader of the output went away" in done.stdout


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
def test_a_query_that_cannot_write_its_output_says_so_not_that_a_trace_is_unreadable() -> None:
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "golem_proxy", "query", MANY_ROWS, SAMPLE, "--csv"],
            cwd=ROOT,
            env=dict(os.environ, PYTHONPATH=str(ROOT)),
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
    assert done.stderr == "golem-proxy: no space left on the device\n"
    assert done.returncode == 2


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
def test_an_export_to_a_full_standard_output_names_it() -> None:
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "golem_proxy", "export", SAMPLE, "--format", "jsonl"],
            cwd=ROOT,
            env=dict(os.environ, PYTHONPATH=str(ROOT)),
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
    assert done.stderr == (
        "golem-proxy: cannot write the standard output (no space left on the device)\n"
    )
    assert done.returncode == 2
