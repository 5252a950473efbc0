"""Comparing two recordings of the same session line for line: each line without what differs
between two runs (times and durations, sequence numbers, ports), grouped by connection, so that two
recordings whose connections interleave differently still compare equal."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

RUN_SPECIFIC = frozenset(
    {"seq", "t", "time", "latency", "held", "client", "upstream", "started", "seed"}
)
"""Keys whose values differ from one run of the same session to the next."""
DURATION = re.compile(r"\b\d+\.\d+ (?:s|ms|µs)\b")
"""A measured duration in a detail (``held for 0.012 s``): a time too."""


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            key: _strip(item)
            for key, item in value.items()
            if key not in RUN_SPECIFIC and not key.endswith("_ms")
        }
    if isinstance(value, list):
        return [_strip(item) for item in value]
    if isinstance(value, str):
        return DURATION.sub("<duration>", value)
    return value


def lines_by_connection(path: Path) -> dict[Any, list[Any]]:
    """The recording's lines after its header, each without its run-specific keys, grouped by
    the connection they belong to (``None``: lines of no connection), in file order."""
    grouped: dict[Any, list[Any]] = defaultdict(list)
    for raw in path.read_bytes().splitlines()[1:]:
        line = json.loads(raw)
        grouped[line.get("conn")].append(_strip(line))
    return dict(grouped)


def differing_lines(first: Path, second: Path) -> list[tuple[Any, Any, Any]]:
    """(connection, line of ``first``, line of ``second``) for every position where the two
    recordings differ once `lines_by_connection` has stripped them (None past a shorter
    side's end); empty when they hold the same lines."""
    one, two = lines_by_connection(first), lines_by_connection(second)
    differing = []
    for conn in sorted(set(one) | set(two), key=repr):
        left, right = one.get(conn, []), two.get(conn, [])
        for index in range(max(len(left), len(right))):
            a = left[index] if index < len(left) else None
            b = right[index] if index < len(right) else None
            if a != b:
                differing.append((conn, a, b))
    return differing
