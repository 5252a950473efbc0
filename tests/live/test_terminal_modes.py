"""The terminal given back when the observing process that drew the TUI died: the modes taken
before the TUI set again and the TUI's screen left, once; nothing when the TUI gave it back
itself. On a real pseudo-terminal."""

from __future__ import annotations

import os
import pty
import termios
import tty
from collections.abc import Iterator

import pytest

from golem_proxy.live.terminal_modes import LEAVE_TUI_MODES, STOP_REPORTS, SavedTerminal


@pytest.fixture
def terminal() -> Iterator[tuple[int, int]]:
    controller, terminal = pty.openpty()
    os.set_blocking(controller, False)
    try:
        yield controller, terminal
    finally:
        os.close(controller)
        os.close(terminal)


def _drawn(controller: int) -> bytes:
    try:
        return os.read(controller, 65536)
    except BlockingIOError:
        return b""


def test_a_raw_terminal_gets_its_modes_back_and_leaves_the_tuis_screen(
    terminal: tuple[int, int],
) -> None:
    controller, fd = terminal
    saved = SavedTerminal(fd, termios.tcgetattr(fd), fd)
    tty.setraw(fd)  # what the TUI did, and a kill -9 left
    saved.give_back()
    modes = termios.tcgetattr(fd)[3]
    assert modes & termios.ICANON and modes & termios.ECHO and modes & termios.ISIG
    assert LEAVE_TUI_MODES in _drawn(controller)


def test_a_terminal_with_its_modes_back_only_gets_the_reports_turned_off(
    terminal: tuple[int, int],
) -> None:
    """A TUI that gave the terminal back itself, or one killed before it went raw (it turns
    the mouse reports on first): leaving the alternate screen again would move the cursor."""
    controller, fd = terminal
    saved = SavedTerminal(fd, termios.tcgetattr(fd), fd)
    saved.give_back()
    drawn = _drawn(controller)
    assert drawn == STOP_REPORTS
    assert b"\x1b[?1049l" not in drawn


def test_a_terminal_that_is_gone_is_nothing_to_give_back() -> None:
    controller, fd = pty.openpty()
    saved = SavedTerminal(fd, termios.tcgetattr(fd), fd)
    os.close(fd)
    os.close(controller)
    saved.give_back()  # no exception


def test_no_terminal_on_stdin_takes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    with open(os.devnull) as not_a_terminal:
        monkeypatch.setattr("sys.stdin", not_a_terminal)
        assert SavedTerminal.take() is None
