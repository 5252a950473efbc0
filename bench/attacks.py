"""The attacks of issue 13's table, each against a fresh golem-proxy started through the CLI
(default log on stdout, recording on) with two routes: ``attack`` to an upstream chosen for the
attack, ``probe`` to an answering upstream that another client keeps timing round trips on.

    python bench/attacks.py [--quick] [--seconds N] [--only NAME ...]
                            [--observer in-process|child-process]

For each attack: whether the proxy survived (still running and a new client is answered),
whether forwarding stayed byte-exact on the attacking connections (digests at both ends) and on
the probe, the probe's worst round trip during the attack and its aftermath, the peak RSS of the
proxy's process tree, and its RSS once the attacking connections closed (next to the baseline).
Loopback only; every attack is bounded in time (--seconds, 15 by default, 4 with --quick) and
stops early if the proxy passes 6 GiB.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from attack_rig import (
    HEADER,
    Conn,
    Digest,
    Memory,
    Probe,
    Proxy,
    Upstream,
    answer_for,
    byte_exact,
    encode,
    proxy,
)
from processes import ROOT, rss, settle
from rich.console import Console
from rich.table import Table

MIB = 1 << 20
WORST_RTT_TARGET = 0.25
PEAK_TARGET = 640 * MIB
NEAR_BASELINE = 32 * MIB
"""RSS after the attack counts as back near the baseline within this much."""


@dataclass
class Context:
    """What an attack's body gets: the proxy, its deadline, and where to put its connections."""

    proxy: Proxy
    framing: str
    upstream: Upstream
    memory: Memory
    deadline: float
    conns: list[Conn] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)

    def connect(self) -> Conn:
        conn = Conn(self.proxy.attack_port)
        self.conns.append(conn)
        return conn

    def upstream_received(self) -> int:
        return sum(c.received.count for c in self.upstream.conns)

    def running(self) -> bool:
        return time.monotonic() < self.deadline and not self.memory.over_cap()

    def request(self, conn: Conn, payload: str) -> bool:
        """Send one request (raw JSON text) and wait for its answer; whether it came."""
        data = encode(payload, self.framing)
        body = data[4:] if self.framing == "golem" else data[:-1]
        expected = answer_for(body, self.framing, self.upstream.error)
        assert expected is not None
        target = conn.received.count + len(expected)
        return conn.send(data, self.deadline) and conn.wait_received(target, 3.0)

    def idle(self) -> None:
        """Hold on until the proxy has digested what it got (or the deadline)."""
        self.idle_until(self.deadline)

    def idle_until(self, deadline: float) -> None:
        remaining = max(deadline - time.monotonic(), 0.0)
        settle(self.proxy.process, remaining)


@dataclass(frozen=True)
class Attack:
    name: str
    body: Callable[[Context], None]
    framing: str = "golem"
    upstream: str = "silent"
    args: tuple[str, ...] = ()
    read_stdout: bool = True
    memory: bool = False
    """A memory attack: its peak and its RSS afterwards are held to issue 13's targets."""
    after: Callable[[Proxy, Context], None] | None = None
    """Runs once the proxy has stopped (its recording closed)."""


def lone_surrogate_method(ctx: Context) -> None:
    conn = ctx.connect()
    jsonrpc = '"jsonrpc":"2.0",' if ctx.framing == "ndjson" else ""
    answered = [ctx.request(conn, "{" + jsonrpc + r'"id":"s2","method":"\udfff"}')]
    time.sleep(0.5)  # the log gets to the line before the next requests go
    for number in range(3):
        answered.append(ctx.request(conn, f'{{{jsonrpc}"id":"n{number}","method":"ping"}}'))
    ctx.findings.append(f"{sum(answered)}/4 requests answered on the attacking connection")


def surrogate_params(ctx: Context) -> None:
    conn = ctx.connect()
    answered = [ctx.request(conn, r'{"id":"v1","method":"ping","params":{"name":"\udfff"}}')]
    time.sleep(0.5)
    for number in range(3):
        answered.append(ctx.request(conn, f'{{"id":"n{number}","method":"ping"}}'))
    ctx.findings.append(f"{sum(answered)}/4 requests answered on the attacking connection")


def surrogate_error(ctx: Context) -> None:
    conn = ctx.connect()
    answered = [ctx.request(conn, f'{{"id":"e{n}","method":"ping"}}') for n in range(4)]
    ctx.findings.append(f"{sum(answered)}/4 error answers arrived on the attacking connection")


def unread_stdout(ctx: Context) -> None:
    conn = ctx.connect()
    sent = answered = 0
    while ctx.running():
        requests = [
            encode(f'{{"id":"q{sent + n}","method":"scene.list_objects","params":{{}}}}', "golem")
            for n in range(100)
        ]
        batch = b"".join(requests)
        expected = sum(len(answer_for(r[4:], "golem") or b"") for r in requests)
        target = conn.received.count + expected
        if not conn.send(batch, ctx.deadline):
            break
        sent += 100
        if not conn.wait_received(target, max(ctx.deadline - time.monotonic(), 0)):
            break
        answered = sent
    ctx.findings.append(f"{answered:,} of {sent:,} pipelined requests answered")


def big_nested_frame(mib: int) -> Callable[[Context], None]:
    """One frame of ``mib`` MiB of ``[[],[],…]``: over the observation limit (60), forwarded
    and digested as it streams; under it (30), held whole, where a parse would hold ~35 times
    its bytes: over the parse limit, so digested whole, not parsed."""

    def body(ctx: Context) -> None:
        size = mib * MIB
        frame = b"[" + b"[]," * ((size - 4) // 3) + b"[]"
        frame += b" " * (size - 1 - len(frame)) + b"]"
        conn = ctx.connect()
        started = time.monotonic()
        done = conn.send(HEADER.pack(len(frame)) + frame, ctx.deadline)
        ctx.findings.append(f"{mib} MiB sent in {time.monotonic() - started:.1f} s" if done else
                            f"{mib} MiB frame: the proxy did not take it in time")  # fmt: skip
        ctx.idle()

    return body


def never_answered_requests(ctx: Context) -> None:
    _never_answered(ctx, '"' + "x" * (MIB - 80) + '"')


def never_answered_nested(ctx: Context) -> None:
    """The same with ``[[],…]``: 1 MiB parsed holds ~37 MiB, 64 such waiting 2.4 GiB."""
    _never_answered(ctx, "[" + "[]," * ((MIB - 80) // 3) + "[]]")


def _never_answered(ctx: Context, body: str) -> None:
    conn = ctx.connect()
    template = bytearray(encode('{"id":"r0000000000","method":"scene.import","params":{"blob":'
                                + body + "}}", "golem"))  # fmt: skip
    at = template.index(b"r0000000000") + 1
    sent = 0
    while ctx.running():
        template[at : at + 10] = b"%010d" % sent
        if not conn.send(bytes(template), ctx.deadline):
            break
        sent += 1
    held = "stopped at the 6 GiB cap" if ctx.memory.over_cap() else "all unanswered"
    ctx.findings.append(f"{sent:,} requests of 1 MiB, {held}")


def notifications(ctx: Context) -> None:
    note = b'{"jsonrpc":"2.0","method":"log.note","params":{"text":"'
    note += b"n" * (100 - len(note) - 4) + b'"}}\n'
    assert len(note) == 100
    batch = note * (MIB // 100)
    conn = ctx.connect()
    sent = 0
    while ctx.running() and conn.send(batch, ctx.deadline):
        sent += len(batch) // 100
    ctx.findings.append(f"{sent:,} notifications of 100 B")


def held_frames(count: int) -> Callable[[Context], None]:
    def body(ctx: Context) -> None:
        length = 64 * MIB
        prefix = b'{"id":1,"method":"scene.import","params":{"blob":"'
        data = HEADER.pack(length) + prefix + b"a" * (length - 1 - len(prefix))
        whole = Digest()
        whole.add(data)
        conns = [ctx.connect() for _ in range(count)]
        senders = [
            threading.Thread(target=c.send, args=(data, ctx.deadline, whole), daemon=True)
            for c in conns
        ]
        for sender in senders:
            sender.start()
        for sender in senders:
            sender.join(max(ctx.deadline - time.monotonic(), 0) + 1)
        total = len(data) * count
        while ctx.running():  # forwarding is live when the upstream has it all before the end
            if ctx.upstream_received() >= total:
                break
            time.sleep(0.1)
        got = ctx.upstream_received()
        ctx.idle()  # held open while the proxy digests what it has of the frames
        ctx.findings.append(f"upstream had {got / MIB:,.0f} of {total / MIB:,.0f} MiB "
                            "before the clients gave up")  # fmt: skip

    return body


def zero_length_frames(ctx: Context) -> None:
    batch = bytes(MIB)
    conn = ctx.connect()
    started = time.monotonic()
    while ctx.running() and conn.send(batch, ctx.deadline):
        pass
    elapsed = time.monotonic() - started
    got = ctx.upstream_received()
    ctx.findings.append(f"{conn.sent.count / MIB:,.0f} MiB sent, forwarded "
                        f"{got / elapsed / 1e6:,.1f} MB/s")  # fmt: skip


_CODE = '{{"id":"c{0}","method":"scripting.execute_python","params":{{"code":"print({0})"{1}}}}}'
REDACTED = [_CODE.format(n, ',"name":"x\\ud800"' if n == 1 else "") for n in range(5)]
"""Five requests whose code is redacted; the second holds a JSON-escaped lone surrogate in
another parameter (the one the redaction does not replace)."""


def redact_surrogate(ctx: Context) -> None:
    conn = ctx.connect()
    ctx.findings.append(f"forwarded {sum(ctx.request(conn, r) for r in REDACTED)}")


def count_recorded(proxy: Proxy, ctx: Context) -> None:
    recorded = 0
    try:
        with open(proxy.record, "rb") as lines:
            for line in lines:
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                recorded += event.get("kind") == "exchange" and event.get("route") == "attack"
    except OSError:
        pass
    ctx.findings.append(f"recorded {recorded} (of {len(REDACTED)} requests)")


ESCAPE = r'{"id":"e1","method":"\u001b]0;PWNED\u001b\\\u001b[2J","params":{}}'


def escape_method(ctx: Context) -> None:
    conn = ctx.connect()
    ctx.request(conn, ESCAPE)
    time.sleep(0.5)


def escapes_shown(proxy: Proxy, ctx: Context) -> None:
    command = [sys.executable, "-m", "golem_proxy", "show", str(proxy.record)]
    try:
        shown = subprocess.run(command, capture_output=True, timeout=60, cwd=ROOT).stdout
    except subprocess.TimeoutExpired:
        shown = b""
    in_show = any(marker in shown for marker in proxy.stdout.MARKERS)
    yes = {True: "YES", False: "no"}
    live = yes[proxy.stdout.escapes]
    ctx.findings.append(f"raw escape sequences in the live log: {live}, in show: {yes[in_show]}")


ATTACKS = [
    Attack(r"\udfff method (golem)", lone_surrogate_method, upstream="answer"),
    Attack(r"\udfff method (jsonrpc-ndjson)", lone_surrogate_method, framing="ndjson",
           upstream="answer", args=("--profile", "jsonrpc-ndjson")),
    Attack(r"\udfff in the plugin's error message", surrogate_error, upstream="surrogate-error"),
    Attack(r"\udfff in params, --verbose", surrogate_params, upstream="answer",
           args=("--verbose",)),
    Attack("stdout a pipe nobody reads", unread_stdout, upstream="answer", read_stdout=False),
    Attack("one 60 MiB frame [[],[],…]", big_nested_frame(60), memory=True),
    Attack("one 30 MiB frame [[],[],…], held whole", big_nested_frame(30), memory=True),
    Attack("upstream never answers, 1 MiB requests", never_answered_requests, memory=True),
    Attack("… 1 MiB requests of [[],[],…]", never_answered_nested, memory=True),
    Attack("… the same with --enforce-limits", never_answered_requests, memory=True,
           args=("--enforce-limits",)),
    Attack("100 B notifications (jsonrpc-ndjson)", notifications, framing="ndjson",
           args=("--profile", "jsonrpc-ndjson"), memory=True),
    Attack("16 conns, 64 MiB frame 1 byte short", held_frames(16), memory=True),
    Attack("64 conns, 64 MiB frame 1 byte short", held_frames(64), memory=True),
    Attack("zero-length frames", zero_length_frames, memory=True),
    Attack(r"--redact + \ud800 request", redact_surrogate, upstream="answer",
           args=("--redact", "params.code"), after=count_recorded),
    Attack("escape-sequence method", escape_method, upstream="answer", after=escapes_shown),
]  # fmt: skip


@dataclass
class Row:
    name: str
    survived: str
    exact: str
    worst: str
    peak: str
    after: str
    findings: list[str]


def close_all(conns: list[Conn], limit: float) -> None:
    """Half-close every connection at once, give the answers on their way ``limit`` seconds
    in all, then close."""
    for conn in conns:
        conn.shutdown()
    deadline = time.monotonic() + limit
    for conn in conns:
        conn.close(max(deadline - time.monotonic(), 0.0))


def _mib(size: int) -> str:
    return f"{size / MIB:,.0f} MiB"


def run_attack(attack: Attack, seconds: float, extra: tuple[str, ...] = ()) -> Row:
    """Start the rig, run ``attack`` for at most ``seconds`` (``extra``: more options for the
    proxy), measure, stop everything."""
    probe_upstream = Upstream(attack.framing, "answer")
    attack_upstream = Upstream(attack.framing, attack.upstream)
    args = list(attack.args) + list(extra)
    with tempfile.TemporaryDirectory() as workdir:
        with proxy(Path(workdir), probe_upstream.port, attack_upstream.port, args,
                   read_stdout=attack.read_stdout) as running:  # fmt: skip
            pid = running.process.pid
            probe = Probe(running.probe_port, attack.framing)
            warm = time.monotonic() + 3
            while len(probe.samples) < 20 and time.monotonic() < warm:
                time.sleep(0.05)
            baseline = rss(pid)
            memory = Memory(pid)
            since = time.monotonic()
            ctx = Context(running, attack.framing, attack_upstream, memory, since + seconds)
            try:
                attack.body(ctx)
            finally:
                close_all(ctx.conns, limit=3.0)
            # The next client: how long until it is answered (the proxy may still be digesting).
            closed = time.monotonic()
            serves = running.serves(attack.framing, limit=seconds * 2)
            waited = time.monotonic() - closed
            probe.finish(2.0)  # once the next client is answered, the probe's answer is near
            worst, worst_seconds = probe.worst(since), probe.worst_seconds(since)
            probe.stop()  # its round trips would keep the proxy from ever looking idle
            ctx.idle_until(time.monotonic() + 10)
            after = memory.settled(5.0)
            peak = memory.stop()
            alive = running.process.poll() is None
            exact = byte_exact(ctx.conns, attack_upstream)
            if probe.wrong:
                exact += f"; probe: {probe.wrong} wrong answers"
        # The proxy has stopped here: its recording is complete, its pipes drained.
        if attack.after is not None:
            attack.after(running, ctx)
    probe_upstream.close()
    attack_upstream.close()
    if serves:
        survived = "yes" if waited < 1 else f"yes (the next client waited {waited:.1f} s)"
    elif alive:
        survived = f"NO (running, a new client got no answer in {waited:.0f} s)"
    else:
        code = running.process.returncode
        survived = f"NO (exited {code}: {running.stderr.last_line()})"
    findings = list(ctx.findings)
    if "60 MiB" in attack.name:
        met = worst_seconds <= WORST_RTT_TARGET
        findings.append(f"worst round trip ≤ 250 ms: {'met' if met else 'MISSED'}")
    if attack.memory:
        findings.append(f"peak ≤ 640 MiB: {'met' if peak <= PEAK_TARGET else 'MISSED'}")
        near = after - baseline <= NEAR_BASELINE
        findings.append(f"back near the baseline: {'yes' if near else 'NO'}")
    return Row(
        attack.name,
        survived,
        exact,
        worst,
        _mib(peak),
        f"{_mib(after)} (baseline {_mib(baseline)})" if alive else "- (exited)",
        findings,
    )


def table(rows: list[Row], seconds: float) -> Table:
    result = Table(title=f"golem-proxy under attack (each at most {seconds:g} s, loopback)")
    for column in ("attack", "survived", "byte-exact", "other conn's worst round trip",
                   "peak RSS", "RSS after close", "findings and targets"):  # fmt: skip
        result.add_column(column, overflow="fold")
    for row in rows:
        result.add_row(row.name, row.survived, row.exact, row.worst, row.peak, row.after,
                       "; ".join(row.findings))  # fmt: skip
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="4 s per attack")
    parser.add_argument("--seconds", type=float, help="time bound of each attack (default 15)")
    parser.add_argument("--only", nargs="*", help="run the attacks whose name contains these")
    parser.add_argument(
        "--observer",
        choices=("in-process", "child-process"),
        help="the proxy's --observer (the attacks it refuses are skipped)",
    )
    args = parser.parse_args()
    seconds = args.seconds or (4.0 if args.quick else 15.0)
    chosen = [a for a in ATTACKS if not args.only or any(o in a.name for o in args.only)]
    extra: tuple[str, ...] = ()
    if args.observer:
        extra = ("--observer", args.observer)
        if args.observer == "child-process":  # it does not take the options that decode inline
            chosen = [a for a in chosen if "--enforce-limits" not in a.args]
    console = Console(width=200)
    rows = []
    for attack in chosen:
        started = time.monotonic()
        try:
            rows.append(run_attack(attack, seconds, extra))
        except Exception as exc:  # the rig's own failure: one row says so, the others still run
            rows.append(Row(attack.name, "?", "?", "?", "?", "?", [f"rig error: {exc!r}"]))
        console.print(f"{attack.name}: done in {time.monotonic() - started:.0f} s")
    console.print(table(rows, seconds))


if __name__ == "__main__":
    main()
