"""The detail pane: everything about the selected flow.

Request and response as highlighted JSON; past `TREE_NODES` values a lazily expanded `Tree`
instead (a 10,000-object scene listing stays instant); strings over `LONG_STRING` characters
(base64 viewport captures) shortened with their size until `e` expands them; a hex dump of
the raw bytes for malformed payloads and framing errors; the flow's violations and timing.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping, Sequence
from typing import Any, Optional

from rich.console import Group, RenderableType
from rich.syntax import Syntax
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static, Tree
from textual.widgets.tree import TreeNode

from golem_core.messages import Malformed
from golem_core.profiles import Profile

from ...analysis.flows import Flow
from ...events import FrameSeen
from ...fast_json import NOT_DECODED, decode_exactly
from ...live.tap_parse import ELIDE_FRAMES_OVER
from ...recording.frame_skeleton import over_parse_budget
from ...terminal import format_size, safe_text
from ..payloads import PayloadReleased, in_recording, payload_of, release_note
from ..render import (
    HEXDUMP_LIMIT,
    LONG_STRING,
    count_nodes,
    fmt_time,
    hexdump,
    safe_json,
    shorten_strings,
)
from ..skeleton import holds_elided_numbers
from .capture import CapturePreview
from .flow_summary import declared_length, flow_summary, violations_table

__all__ = ["TREE_NODES", "FlowDetail"]

TREE_NODES = 200
"""Payloads with more JSON values than this are shown as a tree rather than as text."""
TREE_CHILDREN = 500
"""Children listed under one tree node; the rest are summarised in one leaf."""
READ_BACK_WAIT = 0.5
"""Seconds the pane waits, on the screen's thread, for the recorder to write a payload it
reads back (the bytes the hex dump shows, or a payload shown whole): past that the pane says
the recording is behind, and showing the flow again reads it anew."""
WHOLE_UP_TO = ELIDE_FRAMES_OVER
"""A frame whose payload is at most this many bytes and whose message the view keeps with its
bulk elided (`golem_proxy.tui.skeleton`) is shown whole: its payload read back (or taken, when
kept) and decoded again, once, for as long as it is shown, as the pane showed it before the
view let its bytes go. Over it the live tap elides blobs too, and the pane shows a blob's
placeholder: its base64 says nothing, and reading a 16 MiB capture back for each one shown
would cost the session's process what the preview already spends."""
NUMBERS_WHOLE_UP_TO = 16 * 1024 * 1024
"""Up to this size, a frame whose elided bulk includes numbers is shown whole all the same:
a mesh of about two million numbers (~95 MiB parsed, 0.06 s to decode on the screen's
thread), whose numbers are what its reader came for."""
BULK_SHOWN_ELIDED = "; its bulk is shown elided"
DRAWN_AT_ONCE_UP_TO = 64 * 1024
"""A frame up to this many bytes, its payload in memory, is drawn the moment its row is
selected, however fast rows come (`show` with ``whole=False``): the JSON shown is bounded
anyway (`TREE_NODES` values, long strings shortened), and decoding it again takes well under a
millisecond. A larger one (decoded again or read back from the recording) or one in the
recording is drawn at the pace's interval (pace.py), its heading saying ``loading…`` meanwhile."""
LOADING = "  loading…"


class FlowDetail(VerticalScroll, can_focus=True):
    """Shows the flow the app sets with `show()`; `toggle_strings()` expands long strings."""

    def __init__(self, *, id: Optional[str] = None) -> None:
        super().__init__(id=id)
        self.flow: Optional[Flow] = None
        self.profile: Optional[Profile] = None
        self.under: list[Flow] = []
        """The GOLEM flows the shown tool call caused."""
        self.under_let_go = ""
        """What is said of the GOLEM flows it caused that were let go from memory."""
        self.ended_why = ""
        """Why nothing more is read, once the source said (empty while it reads on)."""
        self.calls: Mapping[tuple[int, int], int] = {}
        """The row numbers of the tool calls the shown GOLEM flow names."""
        self.shared: list[Flow] = []
        """The GOLEM flows the shown tool call may have caused, with other calls."""
        self.resent = ""
        """The rows the shown flow was sent again as, or from (`ResentRows.note`)."""
        self.loading = False
        """The source still reads its file: a request still waiting may be answered further
        on in it (the table says ``loading``, `SessionModel.status`)."""
        self.expand_strings = False
        self._whole: dict[str, tuple[FrameSeen, Any]] = {}
        """By side, the frame shown last and its message's JSON as its payload says it."""
        self.complete = True
        """Every part of the shown flow is drawn; False while a large payload (its heading
        says ``loading…``) or an image waits for `show` with ``whole``."""
        self._drawn: dict[str, FrameSeen] = {}
        """By side, the frame whose body is drawn whole."""

    def compose(self) -> ComposeResult:
        yield Static("No flow selected.", id="summary")
        yield Static("", id="violations")
        for side in ("request", "response"):
            yield Static("", id=f"{side}-title", classes="section")
            if side == "response":
                yield CapturePreview(id="capture")
            yield Static("", id=f"{side}-body")
            tree: Tree[Any] = Tree(side, id=f"{side}-tree")
            tree.display = False
            yield tree

    def show(
        self,
        flow: Optional[Flow],
        profile: Profile,
        under: Sequence[Flow] = (),
        under_let_go: str = "",
        ended_why: str = "",
        calls: Mapping[tuple[int, int], int] = {},
        loading: bool = False,
        shared: Sequence[Flow] = (),
        resent: str = "",
        answer_row: Optional[int] = None,
        whole: bool = True,
    ) -> None:
        """Display ``flow`` (None clears the pane); without ``whole``, only what is cheap
        to draw: the summary and small payloads, each other part saying it is loading
        (`complete` is then False) until shown again whole; ``under``: the GOLEM flows a tool call
        caused, listed under its summary, after ``under_let_go``: what is said of those
        that were let go from memory (the older ones); ``ended_why``: why nothing more is read
        (the source's last word), said of a request it left waiting; ``calls``: the rows of
        the tool calls a GOLEM flow names (`SessionModel.call_rows`); ``resent``: the rows
        it was sent again as, or from (`ResentRows.note`); ``answer_row``: the row of the GOLEM
        exchange whose answer a tool call's result is, not its own (`SessionModel.answer_row`)."""
        self.flow = flow
        self.profile = profile
        self.under = list(under)
        self.under_let_go = under_let_go
        self.ended_why = ended_why
        self.calls = calls
        self.loading = loading
        self.shared = list(shared)
        self.resent = resent
        self.answer_row = answer_row
        self._render_flow(whole)

    def toggle_strings(self) -> bool:
        """Expand or shorten long strings again; returns the new state."""
        self.expand_strings = not self.expand_strings
        self._render_flow()
        return self.expand_strings

    def text(self) -> str:
        """Everything the pane shows as plain text (tree labels included), for tests and copy."""
        parts: list[str] = []
        for child in self.query("Static, Tree"):
            if not child.display:
                continue
            if isinstance(child, Tree):
                parts.extend(str(node.label) for node in _walk(child.root))
            elif isinstance(child, Static):
                parts.append(_plain(child.content))
        return "\n".join(parts)

    def _render_flow(self, whole: bool = True) -> None:
        flow, profile = self.flow, self.profile
        self.complete = True
        preview = self.query_one(CapturePreview)
        response = flow.response if flow is not None else None
        if whole or flow is None:
            preview.show(flow)
        elif not preview.show_decoded(flow, response is not None and _drawn_at_once(response)):
            self.complete = False
        summary = self.query_one("#summary", Static)
        violations = self.query_one("#violations", Static)
        if flow is None or profile is None:
            summary.update(Text("No flow selected."))
            violations.update("")
            for side in ("request", "response"):
                self._show_side(side, None, "")
            return
        summary.update(
            flow_summary(
                flow,
                profile,
                self.under,
                self.under_let_go,
                self.ended_why,
                self.calls,
                self.loading,
                self.shared,
                self.resent,
                self.answer_row,
            )
        )
        violations.update(violations_table(flow) if flow.violations else "")
        violations.display = bool(flow.violations)
        if flow.frame_error is not None:
            error = flow.frame_error
            self._show_side("request", None, "")
            self._drawn.pop("response", None)
            title = f"Framing error {error.direction.arrow} {error.kind.value}"
            body = Group(
                Text(
                    safe_text(error.detail) + declared_length(error.declared_length),
                    style="bold red",
                ),
                Text(hexdump(error.raw), style="cyan"),
            )
            self._set_side("response", title, body)
            return
        self._show_side("request", flow.request, "Request →", whole)
        self._show_side("response", flow.response, "Response ←", whole)

    def _set_side(self, side: str, title: str, body: RenderableType) -> None:
        self.query_one(f"#{side}-title", Static).update(Text(title))
        self.query_one(f"#{side}-body", Static).update(body)
        self.query_one(f"#{side}-body", Static).display = True
        self.query_one(f"#{side}-tree", Tree).display = False

    def _show_side(
        self, side: str, frame: Optional[FrameSeen], title: str, whole: bool = True
    ) -> None:
        if not whole and frame is not None and self._drawn.get(side) is frame:
            return  # drawn whole already: left as it is (a tree keeps what was expanded)
        self._drawn.pop(side, None)
        title_widget = self.query_one(f"#{side}-title", Static)
        body = self.query_one(f"#{side}-body", Static)
        tree: Tree[Any] = self.query_one(f"#{side}-tree", Tree)
        if frame is None:
            flow = self.flow if side == "response" else None
            waiting = ""
            if flow is not None and flow.pending:
                ended = flow.ended_waiting
                waiting = (
                    f"{title} (none: the {ended} ended first)"
                    if ended
                    else f"{title} (loading: it may be further on in the file…)"
                    if self.loading
                    else f"{title} (waiting…)"
                )
            title_widget.update(Text(waiting))
            body.update("")
            tree.display = False
            return
        heading = f"{title}  {format_size(frame.size)}  t={fmt_time(frame.t)}"
        if not whole and not _drawn_at_once(frame):
            # Nothing of it is read (not even its message, which a compact frame parses
            # again): the heading names the selected row's frame, and the body follows.
            title_widget.update(Text(heading) + Text(LOADING, style="dim"))
            body.update("")
            body.display, tree.display = True, False
            self.complete = False
            return
        self._draw_frame(side, frame, heading, title_widget, body, tree)
        self._drawn[side] = frame

    def _draw_frame(
        self,
        side: str,
        frame: FrameSeen,
        heading: str,
        title_widget: Static,
        body: Static,
        tree: Tree[Any],
    ) -> None:
        # A payload the TUI let go (payloads.py) is said to be gone, under the title: what
        # follows is the message the row kept, never an empty body shown as the body.
        note = release_note(frame)
        released = Text(f"\n{safe_text(note)}", style="yellow") if note is not None else Text()
        message = frame.message
        if isinstance(message, Malformed):
            title_widget.update(Text(f"{heading}  malformed: {message.kind.value}") + released)
            parts: list[RenderableType] = [Text(safe_text(message.detail), style="bold red")]
            if message.obj is not None:
                parts.append(self._json(message.obj)[0])
            if note is None:
                try:  # read back from the recording if it holds the bytes (payloads.py)
                    shown = payload_of(frame, first=HEXDUMP_LIMIT, wait=READ_BACK_WAIT)
                    place = in_recording(frame)
                    size = place.size if place is not None else len(frame.payload)
                    parts.append(Text(hexdump(shown, size=size), style="cyan"))
                except PayloadReleased as exc:
                    parts.append(Text(safe_text(str(exc)), style="yellow"))
            body.update(Group(*parts))
            body.display, tree.display = True, False
            return
        obj, unread = self._shown_obj(side, frame)
        if unread:
            released += Text(f"\n{safe_text(unread)}", style="yellow")
        if count_nodes(obj, TREE_NODES + 1) > TREE_NODES:
            title_widget.update(Text(f"{heading}  (tree: enter/space to expand)") + released)
            body.display, tree.display = False, True
            tree.clear()
            tree.root.data = obj
            tree.root.set_label(_label(side, obj, self.expand_strings))
            self._populate(tree.root)
            tree.root.expand()
            return
        rendered, shortened = self._json(obj)
        hint = f"  ({shortened} long string(s) shortened: e expands)" if shortened else ""
        redacted = f"  redacted: {safe_text(', '.join(frame.redacted))}" if frame.redacted else ""
        title_widget.update(Text(heading + hint + redacted) + released)
        body.update(rendered)
        body.display, tree.display = True, False

    def _shown_obj(self, side: str, frame: FrameSeen) -> tuple[Any, str]:
        """The JSON the pane shows for ``frame``: its payload decoded, when the view elided
        its message's bulk and its payload is at most `WHOLE_UP_TO` bytes, or
        `NUMBERS_WHOLE_UP_TO` when numbers were elided (read back once for as long as it is
        shown), else its message's; and why the payload was not read back."""
        obj = frame.message.obj
        shown = self._whole.pop(side, None)  # held only while its frame is shown
        place = in_recording(frame)
        size = place.size if place is not None else len(frame.payload)
        if (
            not frame.elided
            or size > NUMBERS_WHOLE_UP_TO
            or (size > WHOLE_UP_TO and not holds_elided_numbers(obj))
            or release_note(frame) is not None  # its note, under the title, says so
        ):
            return obj, ""
        if shown is not None and shown[0] is frame:
            self._whole[side] = shown
            return shown[1], ""
        try:
            payload = payload_of(frame, wait=READ_BACK_WAIT)
        except PayloadReleased as exc:
            return obj, f"{exc}{BULK_SHOWN_ELIDED}"
        if over_parse_budget(payload, 0):  # as a reader: its skeleton, what the recording has
            return obj, f"payload too large to parse{BULK_SHOWN_ELIDED}"
        whole = decode_exactly(payload)
        if whole is NOT_DECODED:
            try:
                whole = json.loads(payload)
            except (ValueError, RecursionError):  # only the line's ends are checked
                return (
                    obj,
                    f"payload read back is not JSON: the file changed{BULK_SHOWN_ELIDED}",
                )
        self._whole[side] = (frame, whole)
        return whole, ""

    def _json(self, obj: Any) -> tuple[RenderableType, int]:
        shortened = 0
        if not self.expand_strings:
            obj, shortened = shorten_strings(obj, LONG_STRING)
        # Highlighted once into a Text: a Syntax would re-highlight on every measure and paint.
        syntax = Syntax("", "json", theme="ansi_dark")
        text = syntax.highlight(safe_json(obj))
        text.rstrip()
        return text, shortened

    def on_tree_node_expanded(self, event: Tree.NodeExpanded[Any]) -> None:
        self._populate(event.node)

    def _populate(self, node: TreeNode[Any]) -> None:
        if node.children or not isinstance(node.data, (dict, list)):
            return
        value = node.data
        items = list(value.items()) if isinstance(value, dict) else list(enumerate(value))
        for key, child in items[:TREE_CHILDREN]:
            label = _label(key, child, self.expand_strings)
            if isinstance(child, (dict, list)) and child:
                node.add(label, data=child)
            else:
                node.add_leaf(label)
        if len(items) > TREE_CHILDREN:
            node.add_leaf(f"… {len(items) - TREE_CHILDREN:,} more")


def _label(key: Any, value: Any, expand: bool) -> Text:
    # A Text, not a str: a Tree reads a str label as markup, and keys come from the peer.
    name = safe_text(str(key))
    if isinstance(value, dict):
        return Text(f"{name} {{{len(value)}}}")
    if isinstance(value, list):
        return Text(f"{name} [{len(value)}]")
    if isinstance(value, str) and len(value) > LONG_STRING and not expand:
        value = shorten_strings(value, LONG_STRING)[0]
    return Text(f"{name}: {safe_text(json.dumps(value, ensure_ascii=False))}")


def _drawn_at_once(frame: FrameSeen) -> bool:
    """Whether ``frame`` is drawn the moment its row is selected (`DRAWN_AT_ONCE_UP_TO`)."""
    return frame.size <= DRAWN_AT_ONCE_UP_TO and in_recording(frame) is None


def _walk(node: TreeNode[Any]) -> list[TreeNode[Any]]:
    found = [node]
    for child in node.children:
        found.extend(_walk(child))
    return found


def _plain(content: Any) -> str:
    """The text of a Static's content, whatever renderable it holds."""
    if isinstance(content, str):
        return content
    from rich.console import Console

    console = Console(width=200, color_system=None, record=True, file=io.StringIO())
    console.print(content)
    return console.export_text()
