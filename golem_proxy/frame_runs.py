"""Frame numbers as runs: ``((first, last), …)``, both ends included, ascending. How the proxy
names the requests it let go past its pending limits (`ObservationLost.frames`): a client that
pipelines past the limit has consecutive requests let go, one run however many they are."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

__all__ = ["FrameRuns", "frame_runs", "numbers_in", "run_count"]

FrameRuns = tuple[tuple[int, int], ...]


def frame_runs(numbers: Iterable[int]) -> FrameRuns:
    """The runs of ``numbers`` (any order, repeats folded)."""
    runs: list[tuple[int, int]] = []
    for number in sorted(set(numbers)):
        if runs and runs[-1][1] == number - 1:
            runs[-1] = (runs[-1][0], number)
        else:
            runs.append((number, number))
    return tuple(runs)


def numbers_in(runs: FrameRuns) -> Iterator[int]:
    """Every number of ``runs``, run by run: as many as `run_count` says, which a caller that
    did not make the runs bounds before it looks at each."""
    for first, last in runs:
        yield from range(first, last + 1)


def run_count(runs: FrameRuns) -> int:
    """How many numbers ``runs`` hold."""
    return sum(last - first + 1 for first, last in runs)
