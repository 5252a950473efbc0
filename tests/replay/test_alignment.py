"""Aligning two method sequences: SequenceMatcher's own alignment while it is quick, and in
windows past that, where an insertion in a long run of one method still shifts the alignment
once and the alignment says it was made in windows."""

from __future__ import annotations

import difflib
from collections.abc import Hashable, Sequence
from typing import Optional

from hypothesis import given, settings
from hypothesis import strategies as st

from golem_proxy.replay.alignment import Alignment, Block, Windowed, align

METHODS = st.lists(st.sampled_from(["ping", "scene.list_objects", "geometry.create_box", None]))


def matcher_blocks(a: Sequence[Hashable], b: Sequence[Hashable]) -> list[Block]:
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    return [(i, j, size) for i, j, size in matcher.get_matching_blocks() if size]


def pairs_of(blocks: list[Block]) -> list[tuple[int, int]]:
    return [(i + k, j + k) for i, j, size in blocks for k in range(size)]


def assert_an_alignment(alignment: Alignment, a: Sequence[Hashable], b: Sequence[Hashable]) -> None:
    """Every pair joins equal elements and the pairs keep both orders (nothing crosses)."""
    pairs = pairs_of(alignment.blocks)
    assert all(a[i] == b[j] for i, j in pairs)
    assert [i for i, _ in pairs] == sorted({i for i, _ in pairs})
    assert [j for _, j in pairs] == sorted({j for _, j in pairs})


@given(METHODS, METHODS)
@settings(max_examples=300, deadline=None)
def test_short_sequences_are_aligned_as_sequence_matcher_aligns_them(
    a: list[Optional[str]], b: list[Optional[str]]
) -> None:
    alignment = align(a, b)
    assert alignment.blocks == matcher_blocks(a, b)
    assert alignment.windowed is None


@given(METHODS, METHODS, st.integers(min_value=1, max_value=8))
@settings(max_examples=300, deadline=None)
def test_windows_always_give_an_alignment_and_say_so(
    a: list[Optional[str]], b: list[Optional[str]], window: int
) -> None:
    alignment = align(a, b, quick_pairs=0, window=window)
    assert_an_alignment(alignment, a, b)
    if alignment.windowed is not None:
        assert alignment.windowed.window == window


@given(METHODS, METHODS)
@settings(max_examples=300, deadline=None)
def test_one_window_holding_the_whole_middle_is_sequence_matchers_alignment(
    a: list[Optional[str]], b: list[Optional[str]]
) -> None:
    """Between a differing first and last element, a window as long as both sequences is
    aligned by SequenceMatcher from start to end; nothing is left to later windows."""
    a, b = ["first-a", *a, "last-a"], ["first-b", *b, "last-b"]
    alignment = align(a, b, quick_pairs=0, window=len(a) + len(b))
    assert alignment.blocks == matcher_blocks(a, b)
    assert alignment.windowed == Windowed(len(a) + len(b), len(a), len(b))


def test_an_insertion_in_a_long_run_of_one_method_shifts_the_windows_once() -> None:
    a = ["scene.create_layer", *["ping"] * 600, "scene.list_objects"]
    b = ["geometry.create_box", *["ping"] * 250, "scene.get_document_info", *["ping"] * 350]
    b.append("scene.get_object_info")
    alignment = align(a, b, quick_pairs=1000, window=50)
    assert alignment.windowed == Windowed(50, 602, 603)
    pairs = pairs_of(alignment.blocks)
    # Every ping is paired with the ping in the same place of its run.
    assert pairs == [(n, n) for n in range(1, 251)] + [(n, n + 1) for n in range(251, 601)]


def test_a_long_run_that_differs_only_in_a_stretch_pairs_around_it_without_windows() -> None:
    a = ["ping"] * 50_000
    b = [*a[:20_000], "scene.get_document_info", *a[20_000:]]
    assert align(a, b, quick_pairs=1000, window=50) == Alignment(
        [(0, 0, 20_000), (20_000, 20_001, 30_000)]
    )
    assert align(a, a, quick_pairs=1000) == Alignment([(0, 0, 50_000)])
    # The run's common beginning is paired first, then the end: the insertion is all between.
    middle = [*a[:20_000], "scene.get_document_info", "scene.get_document_info", *a[20_000:]]
    assert align(middle, b, quick_pairs=1000).blocks == [(0, 0, 20_001), (20_002, 20_001, 30_000)]


def test_a_window_with_no_equal_element_is_removed_and_added_and_the_next_goes_on() -> None:
    a = [*[f"a.{n}" for n in range(30)], *["ping"] * 20, "a.end"]
    b = [*[f"b.{n}" for n in range(30)], *["ping"] * 20, "b.end"]
    alignment = align(a, b, quick_pairs=0, window=10)
    assert alignment.blocks == [(30, 30, 20)]
    assert alignment.windowed == Windowed(10, 51, 51)


def test_a_long_run_against_every_tenth_changed_pairs_every_element_it_can() -> None:
    """The costliest common shape (SequenceMatcher would take hours on the whole of it),
    aligned in windows: every ping of B is paired, the other methods are added and A's pings
    left over are removed."""
    a = ["ping"] * 20_000
    b = ["scene.get_document_info" if n % 10 == 0 else "ping" for n in range(20_000)]
    alignment = align(a, b)
    assert alignment.windowed is not None
    assert_an_alignment(alignment, a, b)
    assert len(pairs_of(alignment.blocks)) == 18_000


def test_a_block_longer_than_a_window_only_in_one_shifts_the_alignment_once() -> None:
    """B holds 150 calls A lacks, far from another difference: past the window with no equal
    block, the alignment picks up where both are alike again, and everything else pairs."""
    common = [f"m{n % 7}" for n in range(600)]
    a = common[:]
    b = common[:200] + [f"new{n}" for n in range(150)] + common[200:]
    a[500] = b[650] = "changed-in-a"
    b[650] = "changed-in-b"
    alignment = align(a, b, quick_pairs=0, window=10)
    assert_an_alignment(alignment, a, b)
    assert alignment.windowed is not None
    paired = pairs_of(alignment.blocks)
    assert len(paired) == 599  # all but the changed one
    assert {j for _, j in paired}.isdisjoint(range(200, 350))


def test_a_block_longer_than_the_look_ahead_only_in_a_shifts_the_alignment_once() -> None:
    """A's next runs are looked for in all of B and B's in all of A: a block only in A longer
    than the look-ahead is passed over as one only in B is."""
    common = [f"m{n % 7}" for n in range(3000)]
    block = [f"old{n}" for n in range(2500)]
    a = ["first-a", *common[:1000], *block, *common[1000:], "last-a"]
    b = ["first-b", *common, "last-b"]
    alignment = align(a, b, quick_pairs=0, window=10)
    assert_an_alignment(alignment, a, b)
    assert len(pairs_of(alignment.blocks)) == 3000
    assert {i for i, _ in pairs_of(alignment.blocks)}.isdisjoint(range(1001, 3501))
