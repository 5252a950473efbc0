"""`TrimPacing`: the first trim after `TRIM_IDLE`; a burst that comes back after a short pause
makes the next trim wait past such pauses; a long quiet starts again from `TRIM_IDLE`; small
work (a heartbeat) neither teaches a rhythm nor holds a trim back."""

from __future__ import annotations

from golem_proxy.live.heap import TRIM_IDLE, TRIM_IDLE_LONGEST, TrimPacing

LARGE = 1000


def test_a_fresh_process_trims_after_the_shortest_spell() -> None:
    pacing = TrimPacing(LARGE)
    assert pacing.idle_needed == TRIM_IDLE and pacing.wait_left(0.0) == 0.0


def test_a_burst_back_after_a_short_pause_lengthens_the_next_wait_past_it() -> None:
    pacing = TrimPacing(LARGE)
    pacing.worked(LARGE, 9.5)
    pacing.trimmed(10.0)  # idle since 9.5
    pacing.worked(2 * LARGE, 11.0)  # a pause of 1.5 s: a rhythm the trim made pay
    assert pacing.idle_needed == 3.0
    assert pacing.wait_left(11.0) == 3.0 and pacing.wait_left(14.0) == 0.0
    pacing.worked(3 * LARGE, 20.0)  # more bursts, no trim between: they tell nothing
    assert pacing.idle_needed == 3.0


def test_the_wait_is_at_most_the_longest() -> None:
    pacing = TrimPacing(LARGE)
    pacing.trimmed(0.0)
    pacing.worked(LARGE, TRIM_IDLE_LONGEST * 0.75)
    assert pacing.idle_needed == TRIM_IDLE_LONGEST


def test_a_burst_after_a_long_quiet_starts_again_from_the_shortest() -> None:
    pacing = TrimPacing(LARGE)
    pacing.trimmed(0.0)
    pacing.worked(LARGE, 2.0)
    assert pacing.idle_needed > TRIM_IDLE
    pacing.trimmed(100.0)
    pacing.worked(2 * LARGE, 100.0 + TRIM_IDLE_LONGEST)  # a new session, or an attack
    assert pacing.idle_needed == TRIM_IDLE


def test_small_work_neither_teaches_a_rhythm_nor_holds_a_trim_back() -> None:
    pacing = TrimPacing(LARGE)
    pacing.worked(LARGE, 1.0)
    pacing.trimmed(1.5)
    for second in range(2, 60, 2):  # a heartbeat
        pacing.worked(LARGE + second, float(second))
    assert pacing.idle_needed == TRIM_IDLE
    assert pacing.wait_left(60.0) == 0.0
    pacing.worked(LARGE + 60 + LARGE, 61.0)  # small work adds up: it counts once it is large
    assert pacing.wait_left(61.0) > 0.0
