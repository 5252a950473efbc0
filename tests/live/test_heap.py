"""`TrimPacing`: the first trim after `TRIM_IDLE`; work that comes back after a short pause
makes the next trim wait past such pauses; a long quiet starts again from `TRIM_IDLE`."""

from __future__ import annotations

from golem_proxy.live.heap import TRIM_IDLE, TRIM_IDLE_LONGEST, TrimPacing


def test_a_fresh_process_trims_after_the_shortest_spell() -> None:
    assert TrimPacing().idle_needed == TRIM_IDLE


def test_work_back_after_a_short_pause_lengthens_the_next_wait_past_it() -> None:
    pacing = TrimPacing()
    pacing.trimmed(10.0)  # idle since 9.5
    pacing.resumed(11.0)  # a pause of 1.5 s: a rhythm the trim made pay
    assert pacing.idle_needed == 3.0
    pacing.resumed(20.0)  # more work, no trim between: tells nothing
    assert pacing.idle_needed == 3.0


def test_the_wait_is_at_most_the_longest() -> None:
    pacing = TrimPacing()
    pacing.trimmed(0.0)
    pacing.resumed(TRIM_IDLE_LONGEST * 0.75)
    assert pacing.idle_needed == TRIM_IDLE_LONGEST


def test_work_back_after_a_long_quiet_starts_again_from_the_shortest() -> None:
    pacing = TrimPacing()
    pacing.trimmed(0.0)
    pacing.resumed(2.0)
    assert pacing.idle_needed > TRIM_IDLE
    pacing.trimmed(100.0)
    pacing.resumed(100.0 + TRIM_IDLE_LONGEST)  # a new session, or an attack: give back soon
    assert pacing.idle_needed == TRIM_IDLE


def test_work_without_a_trim_before_it_changes_nothing() -> None:
    pacing = TrimPacing()
    pacing.resumed(5.0)
    assert pacing.idle_needed == TRIM_IDLE
