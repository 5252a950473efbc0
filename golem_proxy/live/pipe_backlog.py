"""Bytes waiting for room in the handoff pipe kept in pipes of the forwarding process, not in
its memory: the part of `HandoffWriter`'s backlog that came from a pipe (a large frame's body
moved by the kernel, body_splice.py) stays page references, in order, until the handoff pipe
takes it. Without it, every body forwarded while the observing process trails (most of a run
of 16 MiB answers) would be copied out of the kernel and back in.

One stream of bytes, first in first out, spread over up to ``most`` pipes: `take` splices
bytes in at the tail, `give` splices them out from the head. A pipe emptied is kept for reuse
(one spare) or closed. Everything is non-blocking and never waits.
"""

from __future__ import annotations

import collections

from . import kernel_pipes

__all__ = ["PIPES", "PipeBacklog"]

PIPES = 16
"""The most pipes the backlog holds (each of the handoff pipe's size): 16 MiB, the most a
recording trailing on large blobs lets the relay run ahead (link_ledger.OUTSTANDING_CEILING);
past them, bytes wait in memory as before. Pipes count against a user's pipe budget
(``/proc/sys/fs/pipe-user-pages-soft``, 64 MiB by default), which the backlog stays well
within."""


class _Pipe:
    __slots__ = ("full", "held", "read", "write")

    def __init__(self, size: int) -> None:
        self.read, self.write, _ = kernel_pipes.new_pipe(size)
        self.held = 0
        self.full = False

    def close(self) -> None:
        kernel_pipes.close_all(self.read, self.write)


class PipeBacklog:
    """A stream of bytes held in pipes (see the module docstring)."""

    def __init__(self, pipe_size: int, most: int = PIPES) -> None:
        self.pipe_size = pipe_size
        self.most = most
        self.held = 0
        """Bytes in the backlog."""
        self._pipes: collections.deque[_Pipe] = collections.deque()
        self._spare: list[_Pipe] = []

    def take(self, source: int, size: int) -> int:
        """Splice up to ``size`` bytes from the start of pipe ``source`` in at the tail; how
        many it took (fewer when its pipes are full and no more may be made)."""
        taken = 0
        while taken < size:
            tail = self._pipes[-1] if self._pipes else None
            if tail is None or tail.full:
                tail = self._another()
                if tail is None:
                    break
            try:
                step = kernel_pipes.splice(source, tail.write, size - taken)
            except BlockingIOError:
                step = 0
            except OSError:
                break
            if not step:
                tail.full = True
                continue
            tail.held += step
            taken += step
        self.held += taken
        return taken

    def give(self, target: int, size: int) -> int:
        """Splice up to ``size`` bytes from the head out into ``target``, as far as it takes
        them now. Raises OSError when writing to ``target`` fails (not for a full one)."""
        given = 0
        while given < size and self._pipes:
            head = self._pipes[0]
            try:
                step = kernel_pipes.splice(head.read, target, min(size - given, head.held))
            except BlockingIOError:
                break
            head.held -= step
            given += step
            if not head.held:
                self._pipes.popleft()
                self._retire(head)
            elif not step:
                break
        self.held -= given
        return given

    def clear(self) -> None:
        """Drop everything and close every pipe."""
        for pipe in (*self._pipes, *self._spare):
            pipe.close()
        self._pipes.clear()
        self._spare.clear()
        self.held = 0

    def _another(self) -> _Pipe | None:
        if len(self._pipes) >= self.most:
            return None
        if self._spare:
            pipe = self._spare.pop()
        else:
            try:
                pipe = _Pipe(self.pipe_size)
            except OSError:
                return None
        self._pipes.append(pipe)
        return pipe

    def _retire(self, pipe: _Pipe) -> None:
        if self._spare:
            pipe.close()
            return
        pipe.full = False
        self._spare.append(pipe)
