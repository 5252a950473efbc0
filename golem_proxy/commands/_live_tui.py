"""``proxy`` under the TUI: the session runs in the TUI's worker thread as its event source,
and says what it bound, its client environment and why it could not start."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Optional

import trio
from rich.console import Console
from rich.text import Text

from ..live.control import LiveControl
from ..live.proxy_options import BoundRoute
from ..live.session import ProxySession, SessionConfig
from ..recording.payload_places import PayloadPlaces
from ._bound_routes import environment_hint
from ._common import fail
from ._session_errors import startup_error

if TYPE_CHECKING:
    from ..tui.bridge import EventBuffer, TrioThreadSource


def serve_with_tui(config: SessionConfig, errors: Console) -> int:
    """Run the session in a worker thread and the TUI in this one; quitting the TUI stops the
    session gracefully (connections drain, the recording is flushed) before we return."""
    from ..tui import run_tui
    from ..tui.flow_bound import FlowBound
    from ..tui.payloads import PayloadBudget

    control = LiveControl()
    summaries: list[str] = []
    places = PayloadPlaces(config.record_path) if config.record_path is not None else None
    config = dataclasses.replace(config, payload_places=places)
    source = live_source(config, control, summaries)
    budget = PayloadBudget(recording=config.record_path)
    run_tui(
        source,
        config.profile,
        "golem-proxy",
        header=None,
        control=control,
        payload_budget=budget,
        flow_bound=FlowBound(recording=config.record_path),
    )
    if not source.done.is_set():
        errors.print("[dim]stopping: listeners closed, draining connections…[/]")
    source.done.wait(config.options.drain_timeout + 10)
    if source.error is not None:
        return fail(_describe_failure(source.error))
    for line in summaries:  # as without the TUI: what was recorded, and where
        errors.print(Text(line), soft_wrap=True)
    return 0


def live_source(
    config: SessionConfig,
    control: Optional[LiveControl] = None,
    summaries: Optional[list[str]] = None,
) -> TrioThreadSource:
    """An event source for the TUI that runs the proxy session (in the TUI's worker thread).
    Once listening, it tells the TUI the bound addresses and the client environment.
    Stopping the source stops the session gracefully: it drains and flushes first. With
    ``control``, the TUI can reach the running session through it (intercept, resend); the
    session's closing line (`ProxySession.summary`) is appended to ``summaries``."""
    from ..tui import SourceInfo, TrioThreadSource, hub_sink
    from ..tui.payloads import LeftToRecording

    places = config.payload_places
    lighten = LeftToRecording(places, config.profile, config.route_profiles())

    async def serve(sink: EventBuffer) -> None:
        session = ProxySession(config)
        session.hub.attach_sink(hub_sink(sink, lighten))
        if control is not None:
            control.attach(session)

        async def run_to_the_end(
            *, task_status: trio.TaskStatus[list[BoundRoute]] = trio.TASK_STATUS_IGNORED
        ) -> None:
            # Shielded: the TUI's stop cancels `serve`, which asks for a graceful stop below.
            with trio.CancelScope(shield=True):
                await session.run(task_status=task_status)
            if summaries is not None:
                summaries.append(session.summary())

        try:
            async with trio.open_nursery() as nursery:
                try:
                    bound = await nursery.start(run_to_the_end)
                    notes = live_notes(bound, config)
                    sink.describe(SourceInfo(_bound_description(bound), notes))
                    await trio.sleep_forever()
                finally:
                    session.stop("the TUI was quit")
        finally:
            if control is not None:
                control.detach()

    listens = ", ".join(str(route.listen) for route in config.routes)
    return TrioThreadSource(
        serve,
        description=f"starting on {listens}",
        describe_error=_describe_failure,
        route_profiles=config.route_profiles(),
    )


def _bound_description(bound: list[BoundRoute]) -> str:
    return "live on " + ", ".join(str(item.listen) for item in bound)


def live_notes(bound: list[BoundRoute], config: SessionConfig) -> tuple[str, ...]:
    """What the proxy prints when it starts without the TUI, as lines for the TUI to show:
    the routes as bound, the client environment, the recording, the fault plan."""
    notes = ["   ".join(f"{b.route.name}: {b.listen} → {b.route.upstream}" for b in bound)]
    hint = environment_hint(bound, config.profile)
    if hint:
        notes.append(f"client environment: {hint}")
    if config.record_path:
        notes.append(f"recording to {config.record_path}")
    plan = config.options.faults
    if plan is not None:
        rules = "; ".join(rule.spec for rule in plan.rules)
        notes.append(f"faults: {rules} (seed {plan.seed}: reproduce with --fault-seed {plan.seed})")
    return tuple(notes)


def _describe_failure(exc: BaseException) -> str:
    """One line for a session that could not run: the listen or recording error it started
    with (unwrapped from trio's exception group), else the exception itself."""
    failed = startup_error(exc)
    if failed is not None:
        return f"the proxy could not start: {failed}"
    return f"the proxy stopped: {type(exc).__name__}: {exc}"
