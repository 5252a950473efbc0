"""The real observing process, slowed down: started in place of ``python -m
golem_proxy.live.observing`` (observer_launch.py's `TEST_MODULE`, set to
``tests.live.slow_observing``), it sleeps `PAUSE` seconds before each ``DATA`` record it
decodes, so that its recording trails the wire by seconds while everything else is as in a
real session (for the tests of ``--observer-spool``)."""

from __future__ import annotations

import sys
import time

from golem_proxy.live import observing
from golem_proxy.live.handoff import Kind, Record
from golem_proxy.live.handoff_source import HandoffSource

PAUSE = 0.003
"""Seconds slept before each ``DATA`` record is decoded."""

_handle = HandoffSource._handle


def _slow_handle(self: HandoffSource, record: Record) -> None:
    if record.kind is Kind.DATA:
        time.sleep(PAUSE)
    _handle(self, record)


if __name__ == "__main__":
    HandoffSource._handle = _slow_handle  # type: ignore[method-assign]
    sys.exit(observing.main())
