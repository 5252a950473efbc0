"""How the MCP hop of `golem-proxy mcp` ended (stdio_relay.py): what the drain waits for, and
the words its close line and the frames never delivered say it in."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Optional

__all__ = [
    "DRAIN_LIMIT",
    "DRAIN_TIMEOUT",
    "UNDELIVERED_AFTER_EXIT",
    "UNDELIVERED_PAST_LIMIT",
    "HopEnds",
    "say",
]

DRAIN_TIMEOUT = 2.0
"""How long the child's output may go without a byte moving once it exited, before it is
given up (a grandchild that inherited its pipes could hold them open for ever, and a client
may stop reading)."""
DRAIN_LIMIT = 30.0
"""The longest the child's output goes on once it exited, however it moves (a grandchild that
writes for ever, to a client that reads)."""
UNDELIVERED_AFTER_EXIT = "client took nothing after the server exited"
"""Why the child's last bytes were not delivered, when the drain gave up on the client."""
UNDELIVERED_PAST_LIMIT = "output went on past the drain's limit after the server exited"
"""Why, when the drain gave up at `DRAIN_LIMIT`."""


@dataclass
class HopEnds:
    """How the hop ended, for the close line."""

    client_closed: bool = False
    client_gone: bool = False
    """Our stdout failed (the client stopped reading and closed it): the child's output is
    still drained and observed, no longer forwarded."""
    given_up: str = ""
    """Why the drain gave up the child's output, once it did (`UNDELIVERED_AFTER_EXIT`,
    `UNDELIVERED_PAST_LIMIT`)."""
    undelivered: int = 0
    """Bytes of the child's output read and never delivered to the client."""

    def undelivered_why(self) -> str:
        """Why the child's output from now on is not delivered, as a frame says it."""
        return "client gone" if self.client_gone else self.given_up or "connection ended"

    def close_reason(self, returncode: Optional[int]) -> tuple[str, bool]:
        """The close line's reason, and whether the hop ended abnormally; says on stderr how
        much of the child's output was not delivered (when that was not said as it
        happened)."""
        if returncode is None:
            reason = "the child is still running"
        elif returncode < 0:
            reason = f"the child was killed by signal {-returncode}"
        else:
            reason = f"the child exited with status {returncode}"
        if self.client_closed:
            reason = f"the client closed stdin; {reason}"
        if self.undelivered:
            if self.client_gone:
                why = "the client stopped reading"
            elif self.given_up == UNDELIVERED_PAST_LIMIT:
                why = (
                    f"its output went on for {DRAIN_LIMIT:g} s after it exited (a process it "
                    "started may hold its pipes)"
                )
            elif self.given_up:
                why = f"the client took nothing for {DRAIN_TIMEOUT:g} s after the server exited"
            else:
                why = "the relay stopped"
            reason = f"{reason}; {self.undelivered} bytes of its output not delivered: {why}"
            if not self.client_gone:  # (a client that stopped reading was said at once)
                say(f"{self.undelivered} bytes of the server's output not delivered ({why})")
        abnormal = returncode != 0 or self.client_gone or bool(self.undelivered)
        return reason, abnormal


def say(text: str) -> None:
    """One line on stderr, ``golem-proxy: `` first."""
    try:
        sys.stderr.write(f"golem-proxy: {text}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
