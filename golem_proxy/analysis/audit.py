"""Contract audit of a recording: every violation in a trace, grouped by rule.

Two sources, deduplicated: the violations the proxy's tap recorded, and the profile's checks
run again over the recorded frames, so a trace recorded before a rule existed still gets it.
With a method catalogue, requests are also checked against what the plugin's handlers do
(`golem_core.catalogue`): methods it does not register, params not read, read under another
name or with another value shape, and required params not sent — the drift between client and
plugin, as violations of the ``catalogue.*`` rules (`drift.drift_report` groups them by method).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Optional

from golem_core.catalogue import MethodCatalogue
from golem_core.contract import Severity, Violation
from golem_core.framing import FrameError
from golem_core.messages import Request
from golem_core.profiles import Profile
from golem_core.rulebook import RULES

from ..events import Direction, Event, ViolationSeen
from .flows import Flow
from .proxy_notes import violation_by_proxy

__all__ = [
    "CATALOGUE_RULE_PREFIX",
    "Finding",
    "RuleGroup",
    "audit",
    "group_by_rule",
    "rule_summary",
]

CATALOGUE_RULE_PREFIX = "catalogue."


@dataclass(frozen=True)
class Finding:
    """One violation, located: the flow (row number in `show`) it comes from when known."""

    violation: Violation
    flow: Optional[int]
    conn: Optional[int]
    method: Optional[str]
    direction: Optional[str]
    source: str
    """``recorded`` (by the proxy), ``recheck`` (found again now) or ``catalogue``."""
    by_proxy: Optional[str] = None
    """The proxy's own step that made the violation (``--fault corrupt``, ``intercept:edit``:
    `proxy_by`), not the frame's sender: no error or warning of a peer's."""

    @property
    def counts(self) -> bool:
        """Whether the finding is a peer's: one the proxy made (`by_proxy`) is not."""
        return self.by_proxy is None

    @property
    def rule(self) -> str:
        return self.violation.rule

    @property
    def severity(self) -> Severity:
        return self.violation.severity

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = dict(self.violation.to_json())
        data.update(
            flow=self.flow,
            conn=self.conn,
            method=self.method,
            direction=self.direction,
            source=self.source,
        )
        if self.by_proxy is not None:
            data["by_proxy"] = self.by_proxy
        return data


@dataclass(frozen=True)
class RuleGroup:
    rule: str
    severity: Severity
    summary: str
    findings: tuple[Finding, ...]

    @property
    def count(self) -> int:
        return len(self.findings)

    @property
    def by_proxy(self) -> bool:
        """Whether the proxy made every violation of the group (`Finding.by_proxy`)."""
        return all(not finding.counts for finding in self.findings)

    def to_json(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "severity": self.severity.value,
            "summary": self.summary,
            "count": self.count,
            "by_proxy": self.by_proxy,
            "findings": [finding.to_json() for finding in self.findings],
        }


def rule_summary(rule_id: str) -> str:
    """The documented summary of a rule, or a note that this version does not know it."""
    known = RULES.get(rule_id)
    if known is not None:
        return known.summary
    return "(a rule this version does not document)"


class _Locator:
    """Finds the flow a recorded violation belongs to."""

    def __init__(self, flows: Sequence[Flow]) -> None:
        self.by_frame: dict[tuple[int, str, int], Flow] = {}
        self.by_frame_error: dict[tuple[int, str, float], Flow] = {}
        for flow in flows:
            for frame in (flow.request, flow.response):
                if frame is not None:
                    self.by_frame[(frame.conn, frame.direction.value, frame.index)] = flow
            error = flow.frame_error
            if error is not None:
                self.by_frame_error[(error.conn, error.direction.value, error.t)] = flow

    def find(self, event: ViolationSeen) -> Optional[Flow]:
        if event.direction is None:
            return None
        if event.frame_index is None:
            return self.by_frame_error.get((event.conn, event.direction.value, event.t))
        return self.by_frame.get((event.conn, event.direction.value, event.frame_index))


def proxy_by(
    flow: Optional[Flow], direction: Optional[Direction], violation: Violation
) -> Optional[str]:
    """The proxy's step that made ``violation``, found in ``flow``'s frame of ``direction``
    (`violation_by_proxy` of the steps the flow tracker placed on it), or None."""
    if flow is None or not flow.faults:
        return None
    return violation_by_proxy(flow.faults, direction, violation)


def _located(
    violation: Violation, flow: Optional[Flow], direction: Optional[Direction], source: str
) -> Finding:
    return Finding(
        violation,
        flow.number if flow is not None else None,
        flow.conn if flow is not None else None,
        flow.method if flow is not None else None,
        direction.value if direction is not None else None,
        source,
        proxy_by(flow, direction, violation),
    )


def _recheck(flow: Flow, profile: Profile) -> list[tuple[Violation, Optional[Direction]]]:
    """The violations of ``flow``'s messages, checked again as the tap checks them, each named
    after the side that sent its message: a request the server sent (`Flow.asked_by_server`)
    by `Profile.check_server_request` (its envelope only: the method table lists what the
    server serves), its answer as the client's. A message whose bulk was left out (a payload
    too large to parse, read from its skeleton: ``elided``) is not checked: its placeholders
    would be found wanting where the payload was not, and the tap's own checks of the whole
    message are the recording's violation lines."""
    found: list[tuple[Violation, Optional[Direction]]] = []
    request, response, error = flow.request, flow.response, flow.frame_error
    # A redacted frame holds placeholders where the tap checked values (it checks a frame
    # before redacting it): the recording's violation lines are its findings.
    if request is not None and request.redacted:
        request = None
    if response is not None and response.redacted:
        response = None
    if request is not None and not request.elided:
        if request.direction is Direction.S2C:
            checked = profile.check_server_request(request.message, request.payload)
        else:
            checked = profile.check_message(request.message, request.payload)
        found += [(v, request.direction) for v in checked]
    if response is not None and not response.elided:
        checked = profile.check_message(response.message, response.payload)
        found += [(v, response.direction) for v in checked]
    if request is not None and response is not None and not (request.elided or response.elided):
        # The pair's own checks name the answer, as the tap's do.
        checked = profile.check_exchange(request.message, response.message)
        found += [(v, response.direction) for v in checked]
    if error is not None and not error.cut:  # a frame the proxy cut is no sender's error
        rebuilt = FrameError(
            error.kind, error.detail, error.raw, error.recoverable, error.declared_length
        )
        found.append((profile.frame_violation(rebuilt), error.direction))
    return found


def audit(
    events: Iterable[Event],
    flows: Sequence[Flow],
    profile: Profile,
    catalogue: Optional[MethodCatalogue] = None,
    route_profiles: Optional[Mapping[str, Profile]] = None,
) -> list[Finding]:
    """Every violation in a trace, once, ordered by flow (unlocated ones last). A route in
    ``route_profiles`` (the ``mcp`` route of `golem-proxy mcp`) is checked against its own
    profile, and the method catalogue, which is the plugin's, is not applied to it.

    A violation found again by the re-check is the same as a recorded one when it names the
    same flow (or the same connection-level event), direction, rule and path: a request and
    its answer breaking one rule at the same path (a malformed request answered by a
    malformed error) are two violations, one of each peer."""
    locate = _Locator(flows)
    findings: list[Finding] = []
    seen: set[tuple[Any, ...]] = set()

    def add(finding: Finding) -> None:
        place: Any = finding.flow
        if place is None:  # not tied to a row: only identical reports are the same
            place = (finding.conn, finding.direction, finding.violation.message)
        key = (place, finding.direction, finding.rule, finding.violation.path)
        if key not in seen:
            seen.add(key)
            findings.append(finding)

    for event in events:
        if isinstance(event, ViolationSeen):
            flow = locate.find(event)
            finding = _located(event.violation, flow, event.direction, "recorded")
            if flow is None:  # connection-level: keep at least the connection
                finding = replace(finding, conn=event.conn)
            add(finding)
    own = route_profiles or {}
    for flow in flows:
        for violation, direction in _recheck(flow, own.get(flow.route, profile)):
            add(_located(violation, flow, direction, "recheck"))
        if (
            catalogue is not None
            and flow.request is not None
            and not flow.request.elided
            and not flow.asked_by_server  # the catalogue lists what the plugin serves
            and flow.route not in own
        ):
            message = flow.request.message
            if isinstance(message, Request):
                builtins = profile.builtins_of(flow.route)
                for violation in catalogue.check_request(message, builtins):
                    add(_located(violation, flow, Direction.C2S, "catalogue"))
    findings.sort(key=lambda f: (f.flow is None, f.flow or 0))
    return findings


def group_by_rule(findings: Iterable[Finding]) -> list[RuleGroup]:
    """Findings grouped by rule: errors first, then by count (largest first), then rule id."""
    groups: dict[str, list[Finding]] = {}
    for finding in findings:
        groups.setdefault(finding.rule, []).append(finding)
    result = []
    for rule_id, members in groups.items():
        # The proxy's own (`Finding.by_proxy`) set no severity while a peer's is there.
        counted = [f for f in members if f.counts] or members
        severity = (
            Severity.ERROR
            if any(f.severity is Severity.ERROR for f in counted)
            else Severity.WARNING
        )
        result.append(RuleGroup(rule_id, severity, rule_summary(rule_id), tuple(members)))
    result.sort(key=lambda g: (g.by_proxy, g.severity is not Severity.ERROR, -g.count, g.rule))
    return result
