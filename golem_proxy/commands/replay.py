"""``golem-proxy replay FILE...``: serve a trace as a stand-in plugin."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence
from typing import Any, Optional, Union

import trio

from ..net.addresses import parse_address
from ..net.listeners import ListenError
from ..recording.format import RecordingError, RecordingWriter
from ..replay.engine import summary
from ..replay.matching import MatchMode, MissPolicy
from ..replay.row_numbers import number_all
from ..replay.server import ReplayServer, dump_summary, summary_text
from ..replay.setup import (
    ReplayOptions,
    assign_routes,
    build_engine,
    open_record_new,
    parse_on_miss,
    parse_timing,
    upstreams_for,
)
from ..terminal import safe_text
from ._common import (
    CommandError,
    add_overwrite,
    check_output,
    print_notes,
    trace_path_arg,
    unwrap,
)
from ._options import add_address, add_profile, add_timeout

NAME = "replay"
HELP = "serve recorded traces as a stand-in plugin (server replay)"
ORDER = 40


class _OnMissAction(argparse.Action):
    """``--on-miss POLICY [HOST:PORT]``, as docs/replay.md writes it: the policy, and after
    ``forward`` its address as the next argument (``forward=HOST:PORT`` and the quoted
    ``"forward HOST:PORT"`` are accepted too). argparse has no "one or two values": the option
    takes the arguments up to the next option, and those that are not its own are trace files
    (``--on-miss error trace.jsonl``)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Union[str, Sequence[Any], None],
        option_string: Optional[str] = None,
    ) -> None:
        words = [values] if isinstance(values, str) else list(values or [])
        policy = str(words.pop(0)) if words else ""
        if policy == "forward" and words and not _names_a_trace(str(words[0])):
            policy = f"forward {words.pop(0)}"
        setattr(namespace, self.dest, policy)
        try:
            extra = [trace_path_arg(str(word)) for word in words]
        except argparse.ArgumentTypeError as exc:
            raise argparse.ArgumentError(self, str(exc)) from None
        namespace.files_after_options = [*getattr(namespace, "files_after_options", []), *extra]


def _names_a_trace(word: str) -> bool:
    return word.startswith("sample:") or os.path.exists(word)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.usage = "golem-proxy replay [OPTIONS] FILE [FILE ...]"
    parser.add_argument(
        "files",
        nargs="*",
        metavar="FILE",
        type=trace_path_arg,
        help="recording(s) to serve (or sample:NAME)",
    )
    add_address(
        parser,
        "--listen",
        "main channel address (default 127.0.0.1:9876; port 0: any)",
        default=parse_address("127.0.0.1:9876"),
        metavar=None,
    )
    add_address(
        parser,
        "--gh-listen",
        "Grasshopper channel address (default 127.0.0.1:9877)",
        default=parse_address("127.0.0.1:9877"),
        metavar=None,
    )
    add_profile(parser, "protocol profile (default: the trace's)", default=None)
    parser.add_argument(
        "--match",
        choices=[m.value for m in MatchMode],
        default=MatchMode.METHOD_PARAMS.value,
        help="how requests find recorded answers (default method-params)",
    )
    parser.add_argument(
        "--ignore",
        action="append",
        default=[],
        metavar="PARAM_PATH",
        help="drop a param from matching: params.name or METHOD:params.name",
    )
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="repeat the last recorded answer once a request's queue is empty",
    )
    parser.add_argument(
        "--on-miss",
        default="error",
        nargs="+",
        action=_OnMissAction,
        metavar=("POLICY", "HOST:PORT"),
        help="error | close | forward HOST:PORT (default error)",
    )
    add_address(parser, "--gh-forward", "live Grasshopper channel for --on-miss forward")
    parser.add_argument(
        "--record-new", metavar="PATH", help="write forwarded exchanges to a new trace"
    )
    parser.add_argument(
        "--timing",
        default="none",
        metavar="none|original|xN",
        help="answer at once, with the recorded latencies, or scaled by N",
    )
    parser.add_argument("--report", metavar="FILE", help="write the JSON summary at exit")
    add_overwrite(parser, "--record-new trace or --report file")
    add_timeout(
        parser,
        "exit after this long with no connection open",
        flag="--idle-exit",
        default=None,
        metavar="SECONDS",
    )
    parser.add_argument(
        "--listen-public", action="store_true", help="allow a non-loopback listen address"
    )


def run(args: argparse.Namespace) -> int:
    files = [*args.files, *getattr(args, "files_after_options", [])]
    if not files:
        raise CommandError(
            "replay: the following arguments are required: FILE", "see golem-proxy replay --help"
        )
    for address in (args.listen, args.gh_listen):
        if not address.is_loopback() and not args.listen_public:
            raise CommandError(
                f"refusing to listen on {address}",
                "not a loopback address; pass --listen-public to listen there",
            )
    try:
        on_miss, forward_to = parse_on_miss(args.on_miss)
    except ValueError as exc:
        raise CommandError(f"replay --on-miss: {exc}") from None
    try:
        timing = parse_timing(args.timing)
    except ValueError as exc:
        raise CommandError(f"replay --timing: {exc}") from None
    options = ReplayOptions(
        match=MatchMode(args.match),
        ignore=args.ignore,
        reuse=args.reuse,
        on_miss=on_miss,
        timing=timing,
        profile=args.profile,
    )
    if on_miss is MissPolicy.FORWARD and forward_to is None:
        raise CommandError("--on-miss forward needs a live plugin", "forward HOST:PORT")
    for output in (args.record_new, args.report):  # refused now, not after the replay
        check_output(output, overwrite=args.overwrite, inputs=files)
    try:
        engine = build_engine(files, options)
        listen = assign_routes(engine.index.trace, args.listen, args.gh_listen)
    except RecordingError:
        raise  # names the file and what is wrong with it
    except ValueError as exc:  # mixed profiles, routes that cannot be placed, a bad --ignore
        raise CommandError(str(exc)) from None
    upstreams = upstreams_for(listen, forward_to, args.gh_forward)
    recorder: Optional[RecordingWriter] = None
    if args.record_new:
        recorder = open_record_new(args.record_new, engine, upstreams, overwrite=args.overwrite)
    server = ReplayServer(
        engine,
        listen,
        upstreams=upstreams,
        record_new=recorder,
        allow_public=args.listen_public,
        number_rows=True,
    )
    ended: Optional[str] = None  # how the replay ended in order, for its recording's end
    try:
        ended = trio.run(_serve, server, args.idle_exit)
    except KeyboardInterrupt:
        ended = "stopped by SIGINT"
    except BaseException as exc:
        # A busy port, a path that is not a socket, a public address: the listener's own
        # one-line reason, not trio's exception group around it.
        inner = unwrap(exc)
        if isinstance(inner, ListenError):
            raise inner from None
        raise
    finally:
        if recorder is not None:
            if ended is not None:
                server.end_recording(ended)
            recorder.close()
    # The report names rows: wait for the worker's reading of them, or read them now.
    notes = number_all(engine.index.trace.exchanges)
    report = summary(engine)
    print(summary_text(report), file=sys.stderr, flush=True)
    # What reading the recordings noted (cut short, lines lost or out of order), as every
    # reader says it: what was served came from them.
    print_notes(notes)
    if args.report:
        dump_summary(report, args.report, overwrite=args.overwrite)
    return 0


async def _serve(server: ReplayServer, idle_exit: Optional[float]) -> str:
    """Serve until a signal, or ``idle_exit`` seconds without a connection; returns which."""
    ended: list[str] = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_stop_on_signal, nursery.cancel_scope, ended)
        bound = await nursery.start(server.run)
        # The channels served, by the trace's route names (GOLEM: main= and gh=; a Scrybe
        # trace: its one socket), with socket paths a client can use from anywhere.
        channels = " ".join(
            f"{safe_text(name)}={address.absolute()}" for name, address in bound.items()
        )
        exchanges = len(server.engine.index.trace.exchanges)
        print(f"golem-proxy replay ready: {channels} exchanges={exchanges}", flush=True)
        if idle_exit is not None:
            await _wait_idle(server, idle_exit)
            ended.append(f"no connection for {idle_exit:g} s (--idle-exit)")
            nursery.cancel_scope.cancel()
    return ended[0] if ended else "stopped"


async def _stop_on_signal(scope: trio.CancelScope, ended: list[str]) -> None:
    """Ctrl-C or SIGTERM ends the replay cleanly, so the summary and report still come out
    (and ``ended`` says which)."""
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for signum in signals:
            ended.append(f"stopped by {signal.Signals(signum).name}")
            scope.cancel()
            return


async def _wait_idle(server: ReplayServer, seconds: float) -> None:
    """Return once no connection has been open for ``seconds``."""
    quiet_since = trio.current_time()
    while True:
        await trio.sleep(min(seconds, 0.05))
        now = trio.current_time()
        if server.connections:
            quiet_since = now
        elif now - quiet_since >= seconds:
            return
