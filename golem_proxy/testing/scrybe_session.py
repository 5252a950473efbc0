"""A scripted client session over the whole 0.6 method table, with the app errors the
contract lists, and the disk the stand-in app starts from. `run_scrybe_session` drives it as
the reference client would (``golem-proxy demo --profile jsonrpc-ndjson``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import scrybe_client

if TYPE_CHECKING:
    from .demo_session import DemoOutcome

DISK = {
    "/notes/a.md": "# Title\n\nintro\n\n## Setup\n\nstep one\nstep two\n\n## Usage\n\nrun it\n",
    "/notes/b.md": "# Other\n\nTODO: write\n",
}

SESSION: list[tuple[str, dict[str, Any]]] = [
    ("state", {}),
    ("read", {"path": "/notes/a.md"}),  # ERR_TAB_NOT_OPEN
    ("open", {"path": "/notes/a.md"}),
    ("open", {"path": "/notes/b.md"}),
    ("open", {"path": "/notes/a.md"}),  # reloaded
    ("list_tabs", {}),
    ("read", {"path": "/notes/a.md"}),
    ("section", {"path": "/notes/a.md", "heading": "setup"}),
    ("section", {"path": "/notes/a.md", "heading": "missing"}),  # ERR_SECTION_NOT_FOUND
    ("find", {"pattern": "step", "literal": True}),
    ("find", {"pattern": "todo", "case_sensitive": False, "paths": ["/notes/b.md"]}),
    ("edit", {"path": "/notes/a.md", "start_line": 7, "end_line": 7, "content": "step 1"}),
    ("reload", {"path": "/notes/a.md"}),  # ERR_DIRTY_RELOAD_REFUSED
    ("quit", {}),  # ERR_DIRTY_QUIT_REFUSED
    ("save", {"path": "/notes/a.md"}),
    ("save", {"path": "/notes/c.md"}),  # ERR_TAB_NOT_OPEN
    ("reload", {"path": "/notes/a.md", "force": True}),
    ("set_theme", {"theme": "light"}),
    ("view_mode", {"mode": "cycle"}),
    ("view_mode", {"mode": "preview"}),
    ("set_vim", {"enabled": True}),
    ("state", {}),
    ("close", {"path": "/notes/b.md"}),
    ("close", {"path": "/notes/b.md"}),  # applied: false
    ("logs", {"tail": 3}),
    ("no_such_method", {}),  # ERR_METHOD_NOT_FOUND
    ("read", {}),  # ERR_INVALID_PARAMS (missing path)
    ("quit", {"force": True}),
]


def run_scrybe_session(path: str, outcome: DemoOutcome) -> DemoOutcome:
    """Send `SESSION` to the app at the Unix socket ``path``, one connection per request as
    the reference client does; returns ``outcome`` with the calls counted and the failures
    (error answers and broken replies, as the client saw them) listed."""
    outcome.noun = "request"
    outcome.narrate("the whole Scrybe 0.6 method table, with the errors the contract lists")
    for method, params in SESSION:
        outcome.calls += 1
        answer = scrybe_client.call(path, method, params)
        if not answer.ok:
            outcome.failures.append(f"{method}: {answer.name}")
    return outcome
