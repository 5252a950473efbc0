"""Drift between a trace and a method catalogue, one row per method and param, with the flows
it was seen in and the source line it comes from."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Optional

from golem_core.catalogue import BUILTINS, Drift, MethodCatalogue
from golem_core.messages import Request
from golem_core.profiles import Profile

from ..events import Direction, GapReason
from ..terminal import counted
from .audit import Finding
from .coverage import GapsByReason, gap_counts_text
from .flows import Flow

__all__ = ["KINDS", "RECORDED", "DriftCollector", "DriftReport", "DriftRow", "drift_report"]

RECORDED = "recorded"
"""The side of a row rebuilt from a recorded violation (no catalogue at hand)."""
KINDS = ("unknown-method", "missing-required", "renamed-param", "shape-mismatch", "unread-param")
_RULE_KINDS = {f"catalogue.{kind}": kind for kind in KINDS}


@dataclass
class DriftRow:
    drift: Drift
    flows: list[int] = field(default_factory=list)

    @property
    def recorded(self) -> bool:
        """A row rebuilt from a violation the proxy recorded: only its message is known."""
        return self.drift.side == RECORDED

    def to_json(self) -> dict[str, Any]:
        d = self.drift
        data: dict[str, Any] = {"method": d.method}
        if d.kind == "unknown-method" and not self.recorded:
            data["plugin_registers"] = d.other or None
        elif d.kind == "missing-required":
            data["params"] = d.param.split("|") if d.param else []
            if not self.recorded:
                data["detail"] = d.detail
        elif d.kind == "renamed-param":
            data.update(param=d.param, read_as=d.other or None)
        elif d.kind == "shape-mismatch":
            sent = None if self.recorded else d.detail.removeprefix("sent ")
            data.update(param=d.param, accepts=d.other or None, sent=sent)
        elif d.kind == "unread-param":
            data["param"] = d.param
        data["flows"] = self.flows
        if self.recorded:
            data["message"] = d.detail
        elif d.at:
            data.update(at=d.at, side=d.side)
        return data


@dataclass
class DriftReport:
    """The rows of every kind, and what the catalogue could not tell."""

    catalogue: Optional[str]
    rows: list[DriftRow]
    knows_methods: bool = True
    knows_params: bool = True
    note: str = ""
    commit: Optional[str] = None
    """The source commit the catalogue was built from, when it says."""
    not_checked: GapsByReason = field(default_factory=GapsByReason)
    """The gaps in the client's bytes on the routes read against the catalogue: no request
    in them was checked (by this catalogue, or by the proxy's live). A frame too large to
    observe is one request; another gap holds an unknown number."""

    @property
    def not_checked_note(self) -> str:
        """``not checked: 80 requests in gaps (80 unobserved:frame-too-large, 76.3 MiB)``,
        or empty when every request was read."""
        gaps = self.not_checked
        if not gaps.gaps:
            return ""
        parts = []
        one_each = gaps.reasons.get(GapReason.FRAME_TOO_LARGE.value)
        if one_each is not None:
            parts.append(f"{counted(one_each.gaps, 'request')} in gaps")
        others = gaps.gaps - (one_each.gaps if one_each is not None else 0)
        if others:
            parts.append(f"the requests in {counted(others, 'other gap')}")
        return f"not checked: {' and '.join(parts)} ({gap_counts_text(gaps)})"

    def of(self, kind: str) -> list[DriftRow]:
        return [row for row in self.rows if row.drift.kind == kind]

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "catalogue": self.catalogue,
            "commit": self.commit,
            "knows_methods": self.knows_methods,
            "knows_params": self.knows_params,
        }
        if self.note:
            data["note"] = self.note
        data["not_checked"] = self.not_checked.to_json()
        names = {
            "unknown-method": "unknown_methods",
            "unread-param": "unread_params",
            "missing-required": "missing_required",
            "renamed-param": "renamed_params",
            "shape-mismatch": "shape_mismatches",
        }
        for kind in KINDS:
            data[names[kind]] = [row.to_json() for row in self.of(kind)]
        return data


class DriftCollector:
    """Drift rows gathered as flows stream past (`add_flows`), or, without a catalogue, from
    the catalogue findings the proxy recorded (`add_findings`); `report` sorts them."""

    def __init__(
        self, catalogue: Optional[MethodCatalogue], profile: Optional[Profile] = None
    ) -> None:
        self.catalogue = catalogue
        self.profile = profile
        """Whose channels' builtins are never drift (None: no builtins)."""
        self.rows: dict[tuple[str, str, str, str], DriftRow] = {}
        self.not_checked = GapsByReason()

    def _add(self, drift: Drift, flow: int) -> None:
        key = (drift.kind, drift.method, drift.param, drift.other)
        row = self.rows.setdefault(key, DriftRow(drift))
        if flow not in row.flows:
            row.flows.append(flow)

    def add_flows(self, flows: Iterable[Flow]) -> None:
        catalogue = self.catalogue
        for flow in flows:
            gap = flow.gap
            if gap is not None and gap.direction is Direction.C2S:
                # Requests no catalogue read, this one or the proxy's live: counted also
                # without one at hand, for the rows the proxy recorded.
                self.not_checked.add(flow)
            if catalogue is None:
                continue
            request = flow.request
            message = request.message if request is not None and not request.elided else None
            if isinstance(message, Request):  # a skeleton's params are not the request's
                profile = self.profile
                builtins = profile.builtins_of(flow.route) if profile is not None else ()
                for drift in catalogue.drift(message, builtins):
                    self._add(drift, flow.number)

    def add_findings(self, findings: Iterable[Finding]) -> None:
        if self.catalogue is not None:
            return  # with a catalogue, the flows themselves are read against it
        for finding in findings:
            kind = _RULE_KINDS.get(finding.rule)
            if kind is not None:
                param = finding.violation.path.removeprefix("$.params").lstrip(".")
                said = finding.violation.message
                drift = Drift(kind, finding.method or "?", param, side=RECORDED, detail=said)
                self._add(drift, finding.flow or 0)

    def report(self) -> DriftReport:
        report = _report(self.rows, self.catalogue)
        report.not_checked = self.not_checked
        return report


def drift_report(
    flows: Iterable[Flow],
    findings: Iterable[Finding],
    catalogue: Optional[MethodCatalogue],
    profile: Optional[Profile] = None,
) -> DriftReport:
    """The drift of ``flows`` against ``catalogue`` (the builtins of ``profile``'s channels
    excepted); without one, the catalogue findings the proxy recorded (``findings``) make
    the rows."""
    collector = DriftCollector(catalogue, profile)
    collector.add_flows(flows)
    collector.add_findings(findings)
    return collector.report()


def _report(
    rows: dict[tuple[str, str, str, str], DriftRow], catalogue: Optional[MethodCatalogue]
) -> DriftReport:
    ordered = sorted(
        rows.values(),
        key=lambda r: (KINDS.index(r.drift.kind), r.drift.method, r.drift.param, r.drift.other),
    )
    report = DriftReport(catalogue.source if catalogue is not None else None, ordered)
    if catalogue is not None:
        report.knows_methods = catalogue.knows_methods
        report.knows_params = catalogue.knows_params
        commit = catalogue.built_from.get("commit")
        report.commit = commit if isinstance(commit, str) else None
        if not catalogue.knows_methods:
            report.note = (
                f"{catalogue.source} lists only the builtins ({', '.join(BUILTINS)}): which "
                "methods the plugin handles cannot be known this way and nothing else was "
                "probed, so no drift is reported and none is ruled out"
            )
        elif not catalogue.knows_params:
            report.note = (
                f"{catalogue.source} names methods only: params were not checked "
                "(use --catalogue for params, requirements and shapes)"
            )
    return report
