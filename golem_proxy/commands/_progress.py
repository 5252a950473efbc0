"""Progress of long work on stderr, only when stderr is a terminal: a pipe or a log file gets
nothing (a bar there would be noise, and redrawn lines are not text).

`file_progress` shows how far a command has read a recording (bytes read of its size), taken
from the file descriptor's offset when the bar redraws: the readers are not slowed by a call
per line. `count_progress` counts steps the command reports (exchanges re-sent by `verify`).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Optional

from rich.console import Console, RenderableType
from rich.progress import (
    BarColumn,
    DownloadColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
)

__all__ = ["MIN_BYTES", "count_progress", "file_progress"]

MIN_BYTES = 8 * 1024 * 1024
"""Smaller files are read before a bar would be of use: they get none."""


def _stderr_is_terminal() -> bool:
    try:
        return sys.stderr is not None and sys.stderr.isatty()
    except (AttributeError, OSError, ValueError):
        return False


class _FileProgress(Progress):
    """A Progress whose one task follows a file descriptor's offset."""

    def __init__(self, fd: int, *columns: ProgressColumn, console: Console) -> None:
        self.fd = fd
        self.task: Optional[TaskID] = None
        # No redirection of stdout: the command's own output goes where it goes (a pipe).
        super().__init__(
            *columns,
            console=console,
            transient=True,
            refresh_per_second=8,
            redirect_stdout=False,
            redirect_stderr=False,
        )

    def get_renderables(self) -> Iterable[RenderableType]:
        if self.task is not None:
            # The raw offset runs at most one buffer ahead of what was parsed: near enough.
            with contextlib.suppress(OSError):
                self.update(self.task, completed=os.lseek(self.fd, 0, os.SEEK_CUR))
        yield from super().get_renderables()


@contextmanager
def file_progress(fd: int, description: str) -> Iterator[None]:
    """While the block reads the file open at ``fd``, a bar on stderr of the bytes read of
    the file's size, when stderr is a terminal and the file is large enough to need one."""
    try:
        size = os.fstat(fd).st_size
    except OSError:
        size = 0
    if size < MIN_BYTES or not _stderr_is_terminal():
        yield
        return
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(binary_units=True),
        TimeRemainingColumn(),
    )
    progress = _FileProgress(fd, *columns, console=Console(stderr=True))
    with progress:
        progress.task = progress.add_task(description, total=size)
        yield


@contextmanager
def count_progress(total: int, description: str) -> Iterator[Callable[[int], None]]:
    """A bar on stderr of ``total`` steps when stderr is a terminal; yields the function that
    reports how many steps are done (a no-op without a terminal)."""
    if total <= 0 or not _stderr_is_terminal():
        yield lambda done: None
        return
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
    )
    progress = Progress(
        *columns,
        console=Console(stderr=True),
        transient=True,
        redirect_stdout=False,
        redirect_stderr=False,
    )
    with progress:
        task = progress.add_task(description, total=total)
        yield lambda done: progress.update(task, completed=done)
