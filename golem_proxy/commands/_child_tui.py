"""``proxy --tui --observer child-process``: this process forwards and prints nothing while
it serves; the observing process runs the session's hub, recorder and the TUI
(tui/observing_process.py), and quitting the TUI stops this process as Ctrl-C would."""

from __future__ import annotations

import argparse

from rich.console import Console

from ..live.session import SessionConfig
from ..table_layout import print_line
from ._common import CommandError
from ._options import CHILD_PROCESS, IN_PROCESS
from ._proxy_serve import serve_forwarding
from ._session_errors import run_session

__all__ = ["check_child_tui", "serve_child_tui"]


def check_child_tui(args: argparse.Namespace) -> None:
    """Refuse what the TUI cannot do with observation in another process: deciding held
    frames (they wait in the forwarding process, the TUI's held panel reaches only a session
    of its own process). Raises CommandError."""
    if args.intercept is not None:
        raise CommandError(
            f"--tui with --observer {CHILD_PROCESS} does not take --intercept",
            f"the TUI decides held frames in one process only; use --observer {IN_PROCESS}",
        )


def serve_child_tui(config: SessionConfig, errors: Console, log_buffer: int) -> int:
    """Serve until the TUI quits (or Ctrl-C / SIGTERM); returns the exit code. Raises
    CommandError for a session that could not start (a port in use, the recording)."""
    summary = run_session(config.record_path, _serve, config, log_buffer)
    if summary:  # observation stopped early: what is known here (the TUI is gone)
        print_line(errors, summary)
    return 0


async def _serve(config: SessionConfig, log_buffer: int) -> str:
    # Quiet: the terminal is the TUI's (the observing process says "stopping" once the TUI
    # has given it back); errors still reach stderr.
    quiet = Console(stderr=True, quiet=True)
    return await serve_forwarding(config, quiet, log_buffer, tui=True)
