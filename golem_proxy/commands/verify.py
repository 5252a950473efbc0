"""``golem-proxy verify FILE --target HOST:PORT``: re-send a trace to a live plugin and diff."""

from __future__ import annotations

import argparse
import sys
from functools import partial
from typing import Any

import trio

from ..analysis.request_rows import GAPS_NAMED, UnansweredRequest, gaps_note
from ..analysis.trace import json_text
from ..net.addresses import Address
from ..recording.samples import is_sample
from ..replay.index import ExchangeTrace, load_exchanges, row_label
from ..replay.render import render_verify
from ..replay.trace_update import TraceReadsOtherwise, update_trace
from ..replay.verify import TargetUnreachable, verify_trace
from ..terminal import counted, safe_text
from ._common import (
    CommandError,
    console,
    print_notes,
    reading,
)
from ._comparing import add_comparison_arguments, comparator_from
from ._options import add_address, add_recording, add_timeout
from ._progress import count_progress

NAME = "verify"
HELP = "re-send a trace's requests to a live plugin and compare the answers (client replay)"
ORDER = 41
EXIT_DIFFERENT = 1


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_recording(parser, "recording to verify (or sample:NAME)")
    add_address(parser, "--target", "live plugin, main channel (or unix:PATH)", required=True)
    add_address(parser, "--gh-target", "live plugin, Grasshopper channel")
    add_comparison_arguments(
        parser,
        ignore_metavar="RESULT_PATH",
        ignore_help="leave a path out of the comparison: result.x or METHOD:result.x",
    )
    add_timeout(parser, "seconds to wait for each answer (default 30)")
    parser.add_argument(
        "--update", action="store_true", help="rewrite the trace with the live responses"
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON")


def run(args: argparse.Namespace) -> int:
    comparator = comparator_from(args)
    if args.update and is_sample(args.file):
        raise CommandError(
            f"{args.file} is a sample shipped with golem-proxy",
            "copy it out with golem-proxy samples --copy NAME DIR and update the copy",
        )
    with reading(args.file):
        trace = load_exchanges(args.file)
    if not trace.exchanges:
        trace.close()
        # Nothing re-sent is nothing verified: a CI gate must not pass on it.
        raise CommandError(
            f"{args.file} has no exchange to verify", "no request in it was answered"
        )
    try:
        second = trace.profile.second_channel
        targets = _targets(trace.routes, args.target, args.gh_target, second)
        _check_targets(args.file, trace, targets, second)
        with count_progress(len(trace.exchanges), "verifying") as progress:
            # The recorded exchanges' digests only where they are written back to.
            run = partial(
                verify_trace, timeout=args.timeout, progress=progress, digests=args.update
            )
            result = trio.run(run, trace, targets, comparator)
    except TargetUnreachable as exc:
        # Could not run is not "differs": exit 2, so a CI gate does not call it a regression.
        raise CommandError(str(exc)) from None
    finally:
        trace.close()
    notes = _notes(trace, args.file)
    if args.json:
        payload: dict[str, Any] = {"ok": result.ok, "exchanges": len(result.checks)}
        payload["unasked"] = result.unasked
        payload["failed"] = [check.to_json() for check in result.failed]
        payload["not_sent"] = [check.to_json() for check in result.not_sent]
        payload["notes"] = notes
        print(json_text(payload, indent=2))
    else:
        render_verify(result, console())
    # On stderr, as every reader says them; they change no exit status.
    print_notes(notes)
    if args.update:
        unanswered = result.unanswered
        if unanswered:
            # The trace takes nothing but true answers, and only a whole run of them: half
            # updated, its answers would come from two plugins.
            numbers = ", ".join(row_label(check.row) for check in unanswered[:10])
            more = ", …" if len(unanswered) > 10 else ""
            print(
                f"verify: not updated: {len(unanswered)} of "
                f"{counted(len(result.checks), 'exchange')} got no answer to their request "
                f"({numbers}{more}); {args.file} is left as it was",
                file=sys.stderr,
            )
            return EXIT_DIFFERENT
        try:
            changed = update_trace(args.file, result, comparator)
        except TraceReadsOtherwise as exc:
            raise CommandError(f"{args.file} not updated: {exc}") from None
        print(f"verify: updated {counted(changed, 'response')} in {args.file}", file=sys.stderr)
        extra = [check for check in result.checks if check.extra]
        if extra:
            # A trace holds one answer per request: what came besides it (a second answer,
            # a reply to nothing sent) is not written, and still a difference.
            numbers = ", ".join(row_label(check.row) for check in extra[:10])
            more = ", …" if len(extra) > 10 else ""
            print(
                f"verify: {len(extra)} of {counted(len(result.checks), 'exchange')} got more "
                f"than their answer ({numbers}{more}), which the trace cannot hold: still a "
                "difference",
                file=sys.stderr,
            )
            return EXIT_DIFFERENT
        return 0
    return 0 if result.ok else EXIT_DIFFERENT


def _notes(trace: ExchangeTrace, path: str) -> list[str]:
    """What reading the trace to its end noted (cut short, lines lost, …), its gaps, and its
    requests that have no recorded answer, which verify cannot send: those the plugin got
    may have been acted on when recorded, so what follows may differ for that alone; those
    it never got (`UnansweredRequest.undelivered`) cannot have been."""
    if trace.numbering is None:
        return []
    rows = trace.numbering.rows()
    notes = list(trace.numbering.notes)
    gaps = gaps_note(rows, path)
    if gaps is not None:
        notes.append(gaps)
    sent = [request for request in rows.unanswered if not request.undelivered]
    if sent:
        notes.append(
            f"note: {safe_text(path)}: {counted(len(sent), 'request')} with no answer in "
            f"the recording not sent ({_named(sent)}): the plugin may have acted on "
            f"{'it' if len(sent) == 1 else 'them'} when recorded, so the exchanges after "
            "may differ for that"
        )
    never = [request for request in rows.unanswered if request.undelivered]
    if never:
        notes.append(
            f"note: {safe_text(path)}: {counted(len(never), 'request')} the plugin never got "
            f"when recorded not sent ({_named(never)}): the plugin had gone, so what "
            f"followed does not depend on {'it' if len(never) == 1 else 'them'}"
        )
    return notes


def _named(requests: list[UnansweredRequest]) -> str:
    """``#8 scene.create_layer unanswered; #9 …``: the first of ``requests``, and how many
    more."""
    named = "; ".join(
        f"#{request.number} {safe_text(request.method or '?')} {safe_text(request.status)}"
        for request in requests[:GAPS_NAMED]
    )
    more = len(requests) - GAPS_NAMED
    return named + (f"; and {more} more" if more > 0 else "")


def _check_targets(
    path: str, trace: ExchangeTrace, targets: dict[str, Address], second: str | None
) -> None:
    """Refuse to start when exchanges of the trace have nowhere to go (a Grasshopper trace
    without --gh-target): that is a usage error, not a plugin that answers differently."""
    for route in dict.fromkeys(exchange.route for exchange in trace.exchanges):
        if route not in targets:
            count = sum(exchange.route == route for exchange in trace.exchanges)
            option = "--gh-target HOST:PORT" if route == second else "--target HOST:PORT"
            raise CommandError(
                f"{path} has {count} exchanges on route {route} and no plugin to send them to",
                f"pass {option}",
            )


def _targets(
    routes: list[str], target: Address, gh_target: Address | None, second: str | None
) -> dict[str, Address]:
    """``main`` (or a single route) → --target, the profile's ``second`` channel (GOLEM's
    ``gh``) → --gh-target."""
    found = {name: target for name in routes if name != second}
    if second is not None and second in routes:
        if gh_target is not None:
            found[second] = gh_target
        elif len(routes) == 1:
            found[second] = target
    return found
