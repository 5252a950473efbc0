"""Measuring a scenario: resident memory, open descriptors, live trio tasks, latency
percentiles, and where the figures of a run are written (JSON, one file per scenario)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import trio

FIGURES_ENV = "GOLEM_FIGURES_DIR"


def figures_dir() -> Path:
    """Where figures go: $GOLEM_FIGURES_DIR, or a directory under the system temp dir."""
    path = Path(os.environ.get(FIGURES_ENV) or Path(tempfile.gettempdir()) / "golem-proxy-figures")
    path.mkdir(parents=True, exist_ok=True)
    return path


def write_figures(name: str, figures: dict[str, Any]) -> Path:
    path = figures_dir() / f"{name}.json"
    path.write_text(json.dumps(figures, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path


def rss_kib() -> int:
    """This process's resident set size (VmRSS), in KiB; 0 where /proc is missing."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def open_fds() -> int:
    """How many descriptors this process has open (-1 where /proc is missing)."""
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:
        return -1


def trio_tasks() -> int:
    """Live tasks in the current trio run, counted from the root task down."""
    count = 0
    stack = [trio.lowlevel.current_root_task()]
    while stack:
        task = stack.pop()
        if task is None:
            continue
        count += 1
        for nursery in task.child_nurseries:
            stack.extend(nursery.child_tasks)
    return count


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]
