"""``golem-proxy recover`` run on what a ``kill -9`` of an ``--observer-spool`` session left, as
a user runs it: the real command in a process of its own."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from golem_proxy.live.spool import spool_path
from golem_proxy.live.spool_place import remove_spool

from .proxy_cli import ROOT

RECOVER_TIMEOUT = 120.0
"""Seconds the command may take: it decodes every record of the spool, which a loaded
machine may take a while over, but never forever."""


@dataclass(frozen=True)
class RecoverRun:
    """What ``golem-proxy recover`` said and did."""

    status: int
    """Its exit status (-1: it did not finish within `RECOVER_TIMEOUT`, and was killed)."""
    said: str
    """Its one line (stdout when it has one, else stderr's last line)."""
    path: Path
    """The recording to read after it: the recording, or the copy it left beside it when the
    recording held exchanges the copy does not (``NAME.recovered.jsonl``)."""


def run_recover(record: Path) -> RecoverRun:
    """Run ``golem-proxy recover record`` and return what it did; never raises for what the
    command does (a refusal, a failure, a hang are its figures)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="400")
    try:
        done = subprocess.run(
            [sys.executable, "-m", "golem_proxy", "recover", str(record)],
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            env=env,
            timeout=RECOVER_TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        return RecoverRun(-1, f"did not finish within {RECOVER_TIMEOUT:g} s", record)
    lines = done.stdout.strip().splitlines() or done.stderr.strip().splitlines() or [""]
    said = lines[-1].replace(f"{record.parent}{os.sep}", "")
    beside = record.with_name(f"{record.stem}.recovered{record.suffix or '.jsonl'}")
    return RecoverRun(done.returncode, said, beside if beside.exists() else record)


def remove_spool_left(record: Path) -> None:
    """Remove the spool a killed session left beside ``record``, and its bytes wherever they
    are (a memory file system, through the link: spool_place.py), when `run_recover` did
    not (it failed, or never ran): ten runs leave nothing behind."""
    remove_spool(spool_path(str(record)))
