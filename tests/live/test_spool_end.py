"""``proxy --observer-spool`` at the moments the spool could go: the session's end waits for an
observing process that makes progress however long it goes without the CPU, a spool the
recording lacks part of stays for ``golem-proxy recover`` (the session's last line says so), and
a spool that reached ``--spool-limit`` stays until the observing process read it. The real
command line, real loopback sockets; SIGSTOP stands for an observing process starved of the
CPU."""

from __future__ import annotations

import contextlib
import os
import re
import resource
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from bench.processes import observing_process
from bench.robustness.crash import ThreadedUpstream
from bench.robustness.proxy_cli import ROOT
from golem_proxy.live.observer_launch import TEST_MODULE
from golem_proxy.recording.format import read_recording
from tests.live.observer_child_helpers import golem_calls, observed_proxy, wait_for

CALLS = 300


def _calls(first: int, count: int) -> list[dict[str, object]]:
    return [{"id": n, "method": "echo", "params": {"n": n}} for n in range(first, first + count)]


def _ids(record: Path) -> list[object]:
    return [e.request.message.id for e in read_recording(str(record)).exchanges()]


def _recover(record: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "golem_proxy", "recover", str(record)],
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        capture_output=True,
        text=True,
        timeout=120,
    )


def _calls_until_cut(port: int, first: int = 0) -> None:
    with contextlib.suppress(OSError):  # the proxy is killed under them
        golem_calls(port, _calls(first, CALLS))


def test_the_end_waits_for_an_observing_process_that_goes_a_while_without_the_cpu(
    tmp_path: Path,
) -> None:
    record = tmp_path / "session.jsonl"
    # --drain-timeout 1: without a spool the end would give the process 2 x 1 + 5 s.
    with observed_proxy(record, "--observer-spool", "--drain-timeout", "1") as cli:
        golem_calls(cli.port, _calls(0, 10))
        wait_for(lambda: len(_ids(record)) == 10, what="the first calls recorded")
        observer = observing_process(cli.process.pid)
        os.kill(observer, signal.SIGSTOP)
        try:
            golem_calls(cli.port, _calls(10, CALLS))
            cli.process.send_signal(signal.SIGINT)
            time.sleep(9)  # no acknowledgement moves meanwhile
        finally:
            with contextlib.suppress(ProcessLookupError):  # killed: the assertions say so
                os.kill(observer, signal.SIGCONT)
        _, cli.stderr = cli.process.communicate(timeout=60)  # no second Ctrl-C
    assert cli.process.returncode == 0, cli.stderr
    assert "observation stopped" not in cli.stderr, cli.stderr
    assert _ids(record) == list(range(10 + CALLS))
    assert not Path(f"{record}.spool").exists()


@pytest.mark.parametrize("how", ["stopped again", "observing process killed"])
def test_a_spool_the_recording_lacks_part_of_stays_for_recover(tmp_path: Path, how: str) -> None:
    record = tmp_path / "session.jsonl"
    with observed_proxy(record, "--observer-spool", "--drain-timeout", "1") as cli:
        golem_calls(cli.port, _calls(0, 10))
        wait_for(lambda: len(_ids(record)) == 10, what="the first calls recorded")
        observer = observing_process(cli.process.pid)
        os.kill(observer, signal.SIGSTOP)
        try:
            golem_calls(cli.port, _calls(10, CALLS))
            cli.process.send_signal(signal.SIGINT)
            time.sleep(2)  # the end waits for the recording now
            if how == "stopped again":
                started = time.monotonic()
                cli.process.send_signal(signal.SIGINT)  # a user can always leave
            else:
                os.kill(observer, signal.SIGKILL)
            _, cli.stderr = cli.process.communicate(timeout=60)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.kill(observer, signal.SIGCONT)
    if how == "stopped again":
        assert time.monotonic() - started < 3, cli.stderr
    last = cli.stderr.strip().splitlines()[-1]
    assert f"golem-proxy recover {record} rebuilds the rest" in last, cli.stderr
    assert Path(f"{record}.spool").exists()
    assert len(_ids(record)) < 10 + CALLS
    recovered = _recover(record)
    assert recovered.returncode == 0, recovered.stderr
    assert _ids(record) == list(range(10 + CALLS))
    assert not Path(f"{record}.spool").exists()


def test_a_full_spool_stays_until_the_observing_process_read_it(tmp_path: Path) -> None:
    record = tmp_path / "session.jsonl"
    spool = Path(f"{record}.spool")
    os.environ["GOLEM_PROXY_SPOOL_DIR"] = "beside"  # its size, to see it reach the limit
    try:
        # 16 KiB of spool: ~100 calls' records.
        with observed_proxy(record, "--observer-spool", "--spool-limit", "0.015625") as cli:
            observer = observing_process(cli.process.pid)
            os.kill(observer, signal.SIGSTOP)
            client = threading.Thread(target=_calls_until_cut, args=(cli.port,), daemon=True)
            client.start()
            wait_for(lambda: spool.stat().st_size > 16384, what="the spool to fill")
            time.sleep(1)  # calls go on through the pipe now, the recording not waited for
            assert spool.exists()
            os.kill(cli.process.pid, signal.SIGKILL)  # the proxy, then the observing process
            os.kill(observer, signal.SIGKILL)
            cli.kill()
            client.join(10)
    finally:
        del os.environ["GOLEM_PROXY_SPOOL_DIR"]
    assert _ids(record) == []
    recovered = _recover(record)
    assert recovered.returncode == 0, recovered.stderr
    ids = _ids(record)
    assert len(ids) > 50 and ids == list(range(len(ids))), ids


def test_a_start_that_cannot_make_the_spool_names_the_place_and_leaves_nothing(
    tmp_path: Path,
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "golem_proxy", "proxy", "--observer-spool", "--record",
         "s.jsonl", "--route", "127.0.0.1:0=127.0.0.1:9"],
        cwd=tmp_path,
        env=dict(os.environ, PYTHONPATH=str(ROOT), GOLEM_PROXY_SPOOL_DIR=str(tmp_path / "no")),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )  # fmt: skip
    assert done.returncode != 0
    said = f"golem-proxy: GOLEM_PROXY_SPOOL_DIR={tmp_path / 'no'}: no spool can be made there"
    assert said in done.stderr, done.stderr
    assert os.listdir(tmp_path) == []  # a retry needs no --overwrite


FILLS_AT = 32 * 1024
"""The forwarding process's file size limit (``RLIMIT_FSIZE``) in the tests of a spool whose
file system fills up: its writes past it fail with EFBIG, as with ENOSPC on a full disk."""


def _start_limited(record: Path, upstream: str) -> tuple[subprocess.Popen[str], int]:
    """``proxy --observer-spool`` to ``upstream``, run under `FILLS_AT`; its port."""
    env = dict(
        os.environ,
        PYTHONPATH=str(ROOT),
        COLUMNS="240",
        GOLEM_PROXY_SPOOL_DIR="beside",
        **{TEST_MODULE: "tests.live.unlimited_observing"},
    )

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (FILLS_AT, resource.RLIM_INFINITY))

    process = subprocess.Popen(
        [sys.executable, "-m", "golem_proxy", "proxy", "--observer-spool", "--record",
         str(record), "--route", f"127.0.0.1:0={upstream}"],
        cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, preexec_fn=limit,
    )  # fmt: skip
    assert process.stdout is not None
    for line in process.stdout:
        match = re.search(r": 127\.0\.0\.1:(\d+) →", line)
        if match:
            threading.Thread(target=process.stdout.read, daemon=True).start()
            return process, int(match.group(1))
    raise AssertionError("the proxy did not start")


@pytest.mark.parametrize("end", ["in order", "kill -9"])
def test_a_spool_that_fills_its_file_system_ends_full_and_loses_nothing(
    tmp_path: Path, end: str
) -> None:
    record = tmp_path / "session.jsonl"
    spool = Path(f"{record}.spool")
    with ThreadedUpstream() as upstream:
        process, port = _start_limited(record, upstream.address)
        try:
            golem_calls(port, _calls(0, 10))
            wait_for(lambda: len(_ids(record)) == 10, what="the first calls recorded")
            observer = observing_process(process.pid)
            os.kill(observer, signal.SIGSTOP)  # the spool holds what is not recorded yet
            client = threading.Thread(target=_calls_until_cut, args=(port, 10), daemon=True)
            client.start()
            wait_for(lambda: spool.stat().st_size > FILLS_AT - 1024, what="the spool to fill")
            time.sleep(0.5)
            if end == "kill -9":
                os.kill(process.pid, signal.SIGKILL)
                os.kill(observer, signal.SIGKILL)
            else:
                with contextlib.suppress(ProcessLookupError):  # it was killed: said below
                    os.kill(observer, signal.SIGCONT)
                client.join(60)
                process.send_signal(signal.SIGINT)
            _, stderr = process.communicate(timeout=60)
            client.join(10)
        finally:
            if process.poll() is None:
                process.kill()
                process.communicate()
    if end == "kill -9":
        assert spool.exists()
        recovered = _recover(record)
        assert recovered.returncode == 0, recovered.stderr
        ids = _ids(record)
        # Every exchange the spool held whole, up to the moment it filled up.
        assert len(ids) > 50 and ids == list(range(len(ids))), ids
        return
    assert process.returncode == 0, stderr
    assert "golem-proxy: the spool is full (its file system is full)" in stderr, stderr
    assert "observation stopped" not in stderr, stderr
    assert _ids(record) == list(range(10 + CALLS)) and not spool.exists()
    assert record.read_bytes().count(b'"kind":"spool-full"') == 1
