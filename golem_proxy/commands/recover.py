"""``golem-proxy recover FILE``: rebuild a recording whose session was killed with
``--observer-spool`` from the spool left beside it (live/spool_recover.py)."""

from __future__ import annotations

import argparse

from ..terminal import safe_text
from ._common import EXIT_OK, CommandError, console

NAME = "recover"
HELP = "rebuild a recording of a killed --observer-spool session from FILE.spool"
ORDER = 36


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "file",
        metavar="FILE",
        help="the recording; FILE.spool beside it holds what the proxy forwarded",
    )


def run(args: argparse.Namespace) -> int:
    # Here, not at the top: the other commands' start does not import the live stack.
    from ..live.spool import spool_path
    from ..live.spool_recover import RecoverError, recover

    try:
        done = recover(args.file)
    except RecoverError as exc:
        raise CommandError(str(exc)) from None
    path = safe_text(done.path)
    if done.stopped is not None:
        raise CommandError(
            f"{safe_text(spool_path(args.file))}: decoding stopped before its end: "
            f"{safe_text(done.stopped)}; {safe_text(args.file)} and its spool left as they "
            f"were, what precedes it recovered to {path} ({done.exchanges} exchanges)"
        )
    if done.replaced:
        line = (
            f"{path}: recovered, {done.exchanges} exchanges (it held {done.before}); "
            "it ends with a session-end line saying so"
        )
        if done.unsure:
            line += (
                f"; {done.unsure} connection{'s' if done.unsure != 1 else ''} open at the kill: "
                "the last chunk the spool holds of each way may not have been sent on "
                "(its close says how many bytes)"
            )
    elif done.path != args.file:
        line = (
            f"{safe_text(args.file)} left as it was: it holds exchanges the spool's decoding "
            f"does not ({done.before} against {done.exchanges}); the recovered recording is "
            f"{path}"
        )
    else:  # its spool's process was never fed a record
        line = f"{path}: its spool held nothing to decode; removed, the recording left as it was"
    console().print(line, soft_wrap=True, highlight=False, markup=False)
    return EXIT_OK
