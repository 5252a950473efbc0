"""``golem-proxy resend FILE FLOW --target HOST:PORT``: send a recorded request again to a live
plugin, with a fresh id, and show how the answer differs from the recorded one."""

from __future__ import annotations

import argparse
from functools import partial
from typing import Any

import trio
from rich.text import Text

from golem_core.messages import Malformed

from ..analysis.trace import open_flows
from ..live.resend import ResendError, resend
from ..replay.diffing import Comparator, envelope_body
from ..replay.large_payloads import compare_as_bytes
from ..status_tone import TONE_STYLES, outcome_tone
from ..terminal import format_latency, safe_text
from ._answers import malformed_line, write_json
from ._common import (
    EXIT_FINDINGS,
    CommandError,
    console,
    count_arg,
    reading,
)
from ._options import add_address, add_recording, add_timeout

NAME = "resend"
HELP = "send a recorded request again to a live plugin and diff the two answers"
ORDER = 42


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_recording(parser)
    parser.add_argument("flow", metavar="FLOW", type=count_arg, help="the flow's number (show)")
    add_address(parser, "--target", "the live plugin (or unix:PATH)", required=True)
    add_address(
        parser,
        "--gh-target",
        "the live plugin's second socket (GOLEM's Grasshopper), for a flow of that route",
    )
    add_timeout(parser, "seconds to wait for the answer (default 30)")


def run(args: argparse.Namespace) -> int:
    wanted = int(args.flow)
    with reading(args.file), open_flows(args.file) as trace:
        profile = trace.profile
        other_layers = trace.header.route_profile_names()
        flow = next((f for f in trace.flows() if f.number == wanted), None)
    if flow is None or flow.request is None:
        raise CommandError(f"{args.file} has no request in flow {wanted}", "show lists its flows")
    if flow.route in other_layers:
        raise CommandError(
            f"flow {wanted} is on route {safe_text(flow.route)}, the MCP hop: resend sends to "
            "the plugin",
            "golem-proxy mcp-verify plays tool calls again",
        )
    target = args.target
    if flow.route == profile.second_channel:
        if args.gh_target is None:
            # It went to the plugin's other socket: sent to --target it would ask another.
            raise CommandError(
                f"flow {wanted} came by route {safe_text(flow.route)}, the plugin's second socket",
                "pass --gh-target HOST:PORT",
            )
        target = args.gh_target
    send = partial(resend, timeout=args.timeout)
    try:
        resent = trio.run(send, flow.request.payload, target, profile)
    except ResendError as exc:
        raise CommandError(f"cannot send flow {flow.number} again", str(exc)) from None
    out = console()
    head = Text(f"flow {flow.number} sent again: {safe_text(resent.method)} ", style="bold")
    head.append(f"id {safe_text(str(resent.request_id))}, {format_latency(resent.latency)} → ")
    head.append(safe_text(resent.outcome.text), style=TONE_STYLES[outcome_tone(resent.outcome)])
    out.print(head, soft_wrap=True)
    if resent.strays is not None:
        note = f"before it, {resent.upstream} sent {resent.strays} (not compared)"
        out.print(Text(safe_text(note), style="yellow"), soft_wrap=True)
    if isinstance(resent.message, Malformed):
        # The same line and exit code as `call`: there is no answer to compare.
        out.print(malformed_line(resent.message), soft_wrap=True)
        return EXIT_FINDINGS
    # The profile has read both answers already; neither is decoded a second time.
    new = envelope_body(resent.message.obj)
    if flow.response is None:
        out.print(Text("no recorded answer to compare with", style="yellow"))
        write_json(new, out)
        return 0
    if flow.response.elided:
        # A skeleton (a payload too large to parse): the answers compared as bytes.
        differences = compare_as_bytes(flow.response.payload, resent.response)
    else:
        old: Any = envelope_body(flow.response.message.obj)
        differences = Comparator(learn=False).compare(old, new, resent.method)
    if not differences:
        out.print(Text("same answer as recorded", style="green"))
        return 0
    out.print(Text(f"{len(differences)} differences (recorded vs now):", style="red"))
    for difference in differences:
        out.print(Text(f"  {safe_text(difference.describe())}"), soft_wrap=True)
    return EXIT_FINDINGS
