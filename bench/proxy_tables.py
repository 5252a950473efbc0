"""bench_proxy's tables: each mode's results (median ± spread, ratio to the minimal relay,
``*`` where the observer shed) and issue 25's targets with their verdicts."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional

from proxy_measures import NAN, RECORDED_KINDS, Mode, Series, median
from proxy_rig import RELAY, Config
from rich.table import Table


def _spread(values: Sequence[float]) -> float:
    """Half the range across rounds, relative to the median: the run's noise for one cell."""
    valid = [v for v in values if not math.isnan(v)]
    middle = median(valid)
    return (max(valid) - min(valid)) / 2 / abs(middle) if valid and middle else 0.0


def _cell(values: Sequence[float], scale: float, unit: str, digits: int = 0) -> str:
    middle = median(values)
    if math.isnan(middle):
        return "failed"
    return f"{middle / scale:,.{digits}f}{unit} ±{_spread(values):.0%}"


def _observed(series: Series) -> str:
    if series.recorded is None:
        return "-"
    counts = series.recorded
    share = counts["exchange"] / series.requests if series.requests else 0.0
    catch_up = statistics.median(series.catch_up) if series.catch_up else 0.0
    parts = [f"{counts['exchange']:,} / {series.requests:,} ({share:.1%})"]
    labels = {"violation": "violations", "unobserved": "unobserved", "gap": "gaps"}
    parts += [f"{counts[kind]:,} {labels[kind]}" for kind in RECORDED_KINDS[1:] if counts[kind]]
    return "; ".join([*parts, f"+{catch_up:.1f} s"])


def _ratio(series: Series, relay: Optional[Series], measure: str) -> str:
    """`` (0.54x)``: the median of ``measure`` as a ratio to the minimal relay's, when both
    were measured (and ``relay`` is given)."""
    if relay is None:
        return ""
    theirs, ours = median(getattr(relay, measure)), median(getattr(series, measure))
    if math.isnan(theirs) or math.isnan(ours) or not theirs:
        return ""
    return f" ({_times(ours / theirs)})"


_WORKLOAD_OF = {"p99": "rtt", "per_second": "rtt", "added": "rtt", "big": "big",
                "tiny": "tiny", "sustained": "tiny"}  # fmt: skip


def _measured(series: Series, relay: Optional[Series], measure: str, scale: float, unit: str,
              digits: int = 0) -> str:  # fmt: skip
    """One cell: median ± spread, ``*`` if the observer shed meanwhile, ratio to the relay."""
    shed = "*" if _WORKLOAD_OF[measure] in series.shed else ""
    values = getattr(series, measure)
    return _cell(values, scale, unit, digits) + shed + _ratio(series, relay, measure)


def results_table(configs: list[Config], results: dict[str, Series], mode: Mode) -> Table:
    table = Table(title=f"{mode.name}: medians of {mode.rounds} interleaved rounds (± half the "
                        "range across rounds; ratio to the minimal relay; * = the observer "
                        "shed during that measure)")  # fmt: skip
    columns = ("configuration", "added p50", "p99", "sequential req/s", "CPU per call",
               "16 MiB responses", "pipelined noop frames", "… until idle", "peak RSS",
               "byte-exact", "exchanges recorded / sent; busy after a pipelined run")  # fmt: skip
    for column in columns:
        table.add_column(column, justify="left" if column == "configuration" else "right")
    relay = results.get(RELAY)
    for config in configs:
        if config.missing:
            table.add_row(config.name, config.missing, *[""] * (len(columns) - 2))
            continue
        s = results[config.name]
        against = relay if config.name not in ("direct", RELAY) else None

        added_valid = [a for a in s.added if not math.isnan(a)]
        if config.name == "direct":
            added = f"0 (p50 {median(s.rtt) * 1e6:.0f} µs)"
        elif added_valid:
            half = (max(added_valid) - min(added_valid)) / 2
            added = f"{median(added_valid) * 1e6:.0f} µs ±{half * 1e6:.0f}"
            added += ("*" if "rtt" in s.shed else "") + _ratio(s, against, "added")
        else:
            added = "failed"
        table.add_row(
            config.name,
            added,
            _measured(s, against, "p99", 1e-6, " µs"),
            _measured(s, against, "per_second", 1, "/s"),
            cpu_per_call(s),
            _measured(s, against, "big", 1, " MB/s"),
            _measured(s, against, "tiny", 1e3, "k/s"),
            _measured(s, against, "sustained", 1e3, "k/s", 1),
            f"{s.peak_rss / 2**20:.0f} MiB" if s.peak_rss else "-",
            {True: "yes", False: "NO", None: "?"}[s.exact],
            _observed(s),
        )
    return table


def cpu_per_call(series: Series) -> str:
    """The hop's CPU per sequential call (median across rounds), with each process's share
    when it runs more than one (forwarding + observing): what the rig's two cores must find
    for every call beside the client's and the upstream's."""
    rounds = [r for r in series.cpu_per_call if r]
    if not rounds:
        return "-"
    count = max(len(r) for r in rounds)
    shares = [median([r[i] for r in rounds if len(r) > i]) * 1e6 for i in range(count)]
    total = median([sum(r) for r in rounds]) * 1e6
    apart = " + ".join(f"{share:.0f}" for share in shares)
    return f"{total:.0f} µs" + (f" ({apart})" if count > 1 else "")


@dataclass
class Target:
    label: str
    ours: list[float]
    theirs: list[float]
    bound: float
    at_most: bool
    """True when the ratio must stay at or under ``bound``, False when at or over it."""

    def ratio(self) -> float:
        theirs = median(self.theirs)
        return median(self.ours) / theirs if theirs else NAN

    def per_round(self) -> list[float]:
        """The ratio in each round where both sides were measured."""
        pairs = zip(self.ours, self.theirs)
        return [a / b for a, b in pairs if b and not (math.isnan(a) or math.isnan(b))]

    def met(self, ratio: float) -> bool:
        return ratio <= self.bound if self.at_most else ratio >= self.bound

    def verdict(self) -> str:
        if math.isnan(self.ratio()):
            return "not measured"
        if self.met(self.ratio()):
            return "met"
        rounds = self.per_round()
        hits = sum(self.met(r) for r in rounds)
        if hits:
            return f"MISSED, within noise ({hits}/{len(rounds)} rounds met it)"
        return f"MISSED, beyond noise (0/{len(rounds)} rounds met it)"


def targets(results: dict[str, Series], mode: Mode, name: str) -> list[Target]:
    """Issue 25's targets for ``mode`` that this run can check for the golem-proxy ``name``
    (ratios to the minimal relay)."""
    ours, relay = results.get(name), results.get(RELAY)
    if ours is None or relay is None:
        return []
    if mode.full:
        return [
            Target("added p50 vs the relay's", ours.added, relay.added, 1.0, True),
            Target("p99 vs the relay's", ours.p99, relay.p99, 1.5, True),
            Target("sequential req/s vs the relay", ours.per_second, relay.per_second, 0.9, False),
            Target("16 MiB responses vs the relay", ours.big, relay.big, 0.9, False),
        ]
    return [Target("pipelined noop frames vs the relay", ours.tiny, relay.tiny, 0.95, False)]


def observation_verdict(series: Series, mode: Mode) -> str:
    """Whether the recording holds what ``mode`` demands: every exchange and no gap (full
    observation), or at least half of them (flood); counted from the file."""
    counts = series.recorded
    if counts is None:
        return "no recording"
    share = counts["exchange"] / series.requests if series.requests else 0.0
    losses = counts["unobserved"] + counts["gap"]
    said = (f"{counts['exchange']:,} exchanges of {series.requests:,} sent ({share:.1%}), "
            f"{counts['unobserved']:,} unobserved, {counts['gap']:,} gaps")  # fmt: skip
    if mode.full:
        met = counts["exchange"] == series.requests and not losses
        return f"every exchange recorded, 0 gaps: {'met' if met else 'MISSED'} ({said})"
    return f"at least half observed: {'met' if share >= 0.5 else 'MISSED'} ({said})"


def _times(ratio: float) -> str:
    if math.isnan(ratio):
        return "-"
    return f"{ratio:.2f}x" if ratio >= 0.1 else f"{ratio:.4f}x"


def targets_table(rows: list[Target], mode: Mode, name: str) -> Table:
    table = Table(title=f"{mode.name}: {name}'s targets (issue 25), ratio of medians")
    for column in ("measure", "ratio", "rounds", "target", "verdict"):
        table.add_column(column)
    for row in rows:
        rounds = row.per_round()
        table.add_row(
            row.label,
            _times(row.ratio()),
            f"{_times(min(rounds))} - {_times(max(rounds))}" if rounds else "-",
            f"{'≤' if row.at_most else '≥'} {row.bound:.2f}x",
            row.verdict(),
        )
    return table
