"""The terminal as it was before a TUI took it, given back by the forwarding process when the
observing process that ran the TUI died without giving it back (``proxy --tui``, a ``kill -9``
or the kernel's OOM killer): line editing, echo and Ctrl-C as a signal again, the main screen,
the cursor, no mouse reports. Without it the terminal stayed raw: Ctrl-C was a key nobody
read, and the user could stop the proxy only from another terminal."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import termios
from typing import Any, Optional

__all__ = ["LEAVE_TUI_MODES", "STOP_REPORTS", "SavedTerminal"]

STOP_REPORTS = (
    b"\x18"  # cancels an escape sequence the dead process was cut off in the middle of
    b"\x1b[<u"  # the keyboard protocol the TUI pushed
    b"\x1b[?1000l\x1b[?1003l\x1b[?1015l\x1b[?1006l\x1b[?1016l"  # mouse reports
    b"\x1b[?2004l\x1b[?2048l\x1b[?1004l"  # bracketed paste, size and focus reports
)
"""What the TUI's driver turns on that a shell never wants, undone: harmless to send again."""
LEAVE_TUI_MODES = STOP_REPORTS + b"\x1b[?7h\x1b[?1049l\x1b[?25h"
"""All the driver undoes when it stops: the reports, then line wrap, the main screen and the
cursor (leaving the alternate screen twice moves the cursor back over what was printed)."""


class SavedTerminal:
    """The terminal on stdin's modes, taken before the TUI starts (`take`), set again by
    `give_back` (never raises: a terminal that is gone is nothing to give back)."""

    def __init__(self, fd: int, modes: list[Any], output: Optional[int]) -> None:
        self._fd = fd
        self._modes = modes
        self._output = output

    @classmethod
    def take(cls) -> Optional[SavedTerminal]:
        """Stdin's modes, or None when stdin is no terminal."""
        try:
            fd = sys.stdin.fileno()
            modes = termios.tcgetattr(fd)
        except (AttributeError, OSError, ValueError, termios.error):
            return None
        return cls(fd, modes, _drawn_on())

    def give_back(self) -> None:
        """Leave the TUI's screen and modes, then set the modes taken. When the terminal has
        those modes already (a TUI that stopped gave it back itself, or one killed before it
        went raw) only the reports are turned off: leaving the alternate screen again would
        move the cursor over what was printed after."""
        try:
            given_back = termios.tcgetattr(self._fd) == self._modes
        except (OSError, termios.error):
            return
        # From a background process group (the TUI suspended with Ctrl-Z), changing the
        # terminal would stop this process (SIGTTOU): the forwarding process must not stop.
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTTOU})
        try:
            if self._output is not None:
                with contextlib.suppress(OSError):
                    os.write(self._output, STOP_REPORTS if given_back else LEAVE_TUI_MODES)
            if not given_back:
                with contextlib.suppress(OSError, termios.error):
                    termios.tcsetattr(self._fd, termios.TCSANOW, self._modes)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


def _drawn_on() -> Optional[int]:
    """Where the TUI draws, if it is a terminal: stderr (Textual's output; stdout may be a
    pipe)."""
    with contextlib.suppress(AttributeError, OSError, ValueError):
        if os.isatty(sys.stderr.fileno()):
            return sys.stderr.fileno()
    return None
