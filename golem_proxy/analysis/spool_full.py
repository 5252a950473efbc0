"""What a ``spool-full`` line (`SpoolFull`) means, in the words the live log and the views'
notes share: where the spool (``--observer-spool``) reached ``--spool-limit``, what a
``kill -9`` would have lost on each side of that moment, and that forwarding waits for the
recording again once it caught up with what the spool held."""

from __future__ import annotations

from ..events import SpoolFull

__all__ = ["spool_full_words"]

KILL_LOSES = "~100 ms"
"""What a ``kill -9`` loses of the recording without a spool: the trail the link keeps it
within (docs/reliability.md, "How far a `kill -9` reaches back")."""


def spool_full_words(event: SpoolFull) -> str:
    """``the spool was full (--spool-limit 16 MiB): …``, without its time."""
    limit = event.limit / (1024 * 1024)
    return (
        f"the spool was full (--spool-limit {limit:g} MiB) and the session went on without "
        "it: up to this point it held everything forwarded (a kill -9 would have lost no line, "
        "golem-proxy recover rebuilds them); from this point the session went on through the "
        "pipe without waiting while the recording caught up with what the spool held (the "
        "spool stays until then; a kill -9 meanwhile loses what was forwarded after this "
        "point), then forwarding waits for the recording again and a kill -9 loses at most "
        f"{KILL_LOSES} of lines"
    )
