"""The arguments several commands take, each added by one function: a recording to read, a
plugin address, a timeout, a protocol profile, where the observer runs. One place decides their
type and wording, so ``show FILE`` and ``stats FILE`` cannot drift apart."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from typing import Optional

from golem_core.profiles import PROFILES

from ..net.addresses import Address
from ._common import CommandError, address_arg, count_arg, seconds_arg, trace_path_arg

RECORDING_HELP = "a recording (.jsonl, or sample:NAME)"

IN_PROCESS = "in-process"
CHILD_PROCESS = "child-process"
OBSERVER_PLACES = (IN_PROCESS, CHILD_PROCESS)


def add_recording(
    parser: argparse.ArgumentParser,
    help: str = RECORDING_HELP,
    *,
    dest: str = "file",
    metavar: str = "FILE",
) -> None:
    """Add the positional recording ``dest``: a path, or ``sample:NAME`` resolved to the
    shipped sample's path (`trace_path_arg`)."""
    parser.add_argument(dest, metavar=metavar, type=trace_path_arg, help=help)


def add_address(
    parser: argparse.ArgumentParser,
    flag: str,
    help: str,
    *,
    default: Optional[Address] = None,
    required: bool = False,
    metavar: Optional[str] = "HOST:PORT",
) -> None:
    """Add the option ``flag`` taking ``HOST:PORT``, ``[V6]:PORT`` or ``unix:PATH``
    (`address_arg`); None for ``metavar`` keeps argparse's own (the flag's name)."""
    parser.add_argument(
        flag, type=address_arg, default=default, required=required, metavar=metavar, help=help
    )


def add_timeout(
    parser: argparse.ArgumentParser,
    help: str,
    *,
    flag: str = "--timeout",
    default: Optional[float] = 30.0,
    metavar: Optional[str] = None,
) -> None:
    """Add the option ``flag``: a number of seconds, at least 0 (`seconds_arg`)."""
    parser.add_argument(flag, type=seconds_arg, default=default, metavar=metavar, help=help)


def add_profile(
    parser: argparse.ArgumentParser,
    help: str,
    *,
    default: Optional[str] = "golem",
    choices: Optional[Sequence[str]] = None,
) -> None:
    """Add ``--profile``, one of the protocol profiles' names (`golem_core.profiles`), or of
    ``choices`` where a command serves only some."""
    names = sorted(PROFILES) if choices is None else list(choices)
    parser.add_argument("--profile", choices=names, default=default, help=help)


def mebibytes_arg(text: str) -> int:
    """A size given in MiB (fractions allowed), in bytes."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of MiB: {text!r}") from None
    if not 0 < value <= 1 << 20:
        raise argparse.ArgumentTypeError(f"out of range: {text} MiB")
    return int(value * 1024 * 1024)


def check_spool(args: argparse.Namespace, child: bool, record_path: Optional[str]) -> None:
    """``--observer-spool`` needs an observing process of its own and a recording to put the
    spool beside. Raises CommandError."""
    if not args.observer_spool:
        return
    if not child:
        raise CommandError("--observer-spool needs --observer child-process")
    if record_path is None:
        raise CommandError("--observer-spool needs a recording (--record or --record-dir)")
    spool = record_path + ".spool"
    if not args.overwrite and os.path.lexists(spool):
        # Checked before the recording is created: a session that cannot start leaves no
        # empty recording behind.
        raise CommandError(
            f"{spool} already exists: a session recording there was killed before it ended",
            "pass --overwrite to replace it and the recording",
        )


def add_observer(
    parser: argparse.ArgumentParser,
    *,
    default: Optional[str],
    help: str,
    hold_help: str,
    tui: bool = True,
) -> None:
    """Add ``--observer`` (one of `OBSERVER_PLACES`, ``default`` when absent) and
    ``--observer-hold`` (seconds, `HOLD_LIMIT` when absent); each command words its own help.
    ``tui``: the command has a ``--tui`` (the help of ``--observer-restarts`` says what it
    does there; a command without one is not told of it)."""
    # Here, not at the top: a command that reads a recording does not import the live stack.
    from ..live.link_holds import HOLD_LIMIT
    from ..live.proxy_options import RESTARTS
    from ..live.spool import SPOOL_LIMIT

    with_tui = (
        ("; ~47 with --tui", ", and with --tui the new one shows the rows before it, read back "
         "from the recording")
        if tui
        else ("", "")
    )  # fmt: skip
    parser.add_argument("--observer", choices=OBSERVER_PLACES, default=default, help=help)
    parser.add_argument(
        "--observer-hold",
        type=seconds_arg,
        default=HOLD_LIMIT,
        metavar="SECONDS",
        help=hold_help,
    )
    parser.add_argument(
        "--observer-restarts",
        type=count_arg,
        default=RESTARTS,
        metavar="N",
        help="with --observer child-process: how many times an observing process that dies "
        f"is replaced by a new one, started ahead and waiting (~32 MiB{with_tui[0]}), "
        "which takes the open connections up at their next frame; what crossed meanwhile is "
        f"a gap in the recording{with_tui[1]} (default: {RESTARTS}; 0: no process waits, and "
        "observation stops for the rest of the session)",
    )
    parser.add_argument(
        "--observer-spool",
        action="store_true",
        help="with --observer child-process and a recording: hand every forwarded byte to the "
        "observing process through a spool file (REC.spool links to it: on a memory file "
        "system, /dev/shm, where there is one; GOLEM_PROXY_SPOOL_DIR chooses) instead of "
        "waiting for it to decode: forwarding runs at the relay's pace, the recording's lines "
        "trail the wire, and at the end the proxy waits until they are all written, then "
        "removes the spool (it costs a second write of every byte, and memory, or disk, up to "
        "--spool-limit)",
    )
    parser.add_argument(
        "--spool-limit",
        type=mebibytes_arg,
        default=SPOOL_LIMIT,
        metavar="MIB",
        help="with --observer-spool: how large the spool may grow, in MiB (default: "
        f"{SPOOL_LIMIT // 2**20}); past it the proxy says so once and goes on as without "
        "--observer-spool (once the recording caught up with what the spool held, forwarding "
        "waits for it again; the spool goes once it is recorded)",
    )
