"""Frame numbers as runs: folded whatever their order, and read back one by one."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from golem_proxy.frame_runs import frame_runs, numbers_in, run_count


def test_consecutive_numbers_are_one_run_and_gaps_start_another() -> None:
    assert frame_runs([9, 3, 4, 5, 5, 11, 10]) == ((3, 5), (9, 11))
    assert frame_runs([]) == ()


@given(st.sets(st.integers(min_value=0, max_value=500)))
def test_the_runs_hold_exactly_the_numbers(numbers: set[int]) -> None:
    runs = frame_runs(numbers)
    assert list(numbers_in(runs)) == sorted(numbers)
    assert run_count(runs) == len(numbers)
    assert all(first <= last for first, last in runs)
    assert all(a[1] + 1 < b[0] for a, b in zip(runs, runs[1:]))  # as few runs as can be
