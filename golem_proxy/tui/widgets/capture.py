"""The picture in a `viewport.capture` answer, drawn in the detail pane in half blocks.

Decoding is pure Python (a plugin's PNG filters every scanline), so it runs in a worker thread
and the pane says so meanwhile; the last few decoded images are kept, so moving back to a
capture shows it at once. An answer whose message holds its image as a placeholder (typed with
its long strings elided: a live frame over 1 MiB, or one left in its recording) is read in the
worker too, from memory or back from the recording (`payloads.payload_of`).
"""

from __future__ import annotations

import json
from collections import OrderedDict
from typing import Optional, Union

from rich.console import Group
from rich.text import Text
from textual import work
from textual.widgets import Static
from textual.worker import get_current_worker

from ...analysis.flows import Flow
from ...events import FrameSeen
from ..payloads import PayloadReleased, payload_of
from ..png import PngError, PngImage, PngPreview, decode_png, find_png

__all__ = ["CapturePreview"]

KEPT = 8
"""Decoded images kept (by flow number)."""
PREVIEW_ROWS = 16
"""At most this many lines high (32 pixel rows)."""


class CapturePreview(Static):
    """Hidden unless the flow's response carries a PNG image."""

    def __init__(self, *, id: Optional[str] = None) -> None:
        super().__init__("", id=id)
        self.flow: Optional[Flow] = None
        self._decoded: OrderedDict[int, Union[PngImage, str]] = OrderedDict()
        self._no_image_in: OrderedDict[int, None] = OrderedDict()
        """Flows whose answer, read in full, held no PNG after all (`KEPT` of them, by
        number): not read again each time they are shown."""
        self._deferred = False
        """The flow's image, if it has one, waits for `show` (`show_decoded`)."""

    def show(self, flow: Optional[Flow]) -> None:
        """Show the image in ``flow``'s response, if it has one."""
        self.flow = flow
        self._deferred = False
        response = flow.response if flow is not None else None
        if flow is None or response is None:
            self._stop_decoding()
            self.display = False
            return
        known = self._decoded.get(flow.number)
        if known is not None:
            self._stop_decoding()
            self.display = True
            self._draw(known)
            return
        data = find_png(getattr(response.message, "obj", None))
        if data is not None:
            self.display = True
            self.update(Text(f"Image: decoding {len(data):,} bytes of PNG…", style="dim"))
            self._decode(flow, data)
        elif _image_elided(response) and flow.number not in self._no_image_in:
            # The message holds a placeholder: the image is in the payload, kept or in the
            # recording (payloads.py), read in the worker.
            self.display = True
            self.update(Text("Image: reading the answer…", style="dim"))
            self._decode(flow, None)
        else:
            self._stop_decoding()
            self.display = False

    def show_decoded(self, flow: Flow, look: bool) -> bool:
        """Show ``flow``'s image if it is decoded already, decoding nothing: a row passing by
        is not worth a pure-Python decode, however small its PNG. ``look``: its answer is
        small enough to look into for an image. False when it may hold one still to decode
        (until `show`, said to be loading when it is known to be there, else hidden)."""
        if flow is self.flow and not self._deferred:
            return True  # shown, or being decoded, already
        self.flow = flow
        self._stop_decoding()
        known = self._decoded.get(flow.number)
        if known is not None:
            self._deferred = False
            self.display = True
            self._draw(known)
            return True
        response = flow.response
        self._deferred = response is not None and flow.number not in self._no_image_in
        if response is not None and self._deferred and look:
            holds = find_png(getattr(response.message, "obj", None)) is not None
            self._deferred = holds or _image_elided(response)
        # Said to be coming only when it is known to be there (a large answer's heading
        # already says it is loading).
        self.display = self._deferred and look
        if self.display:
            self.update(Text("Image: loading…", style="dim"))
        return not self._deferred

    def _stop_decoding(self) -> None:
        """The flow shown now needs no worker: the one decoding another's image is cancelled
        (starting a worker does that too), so it does not decode what nobody shows."""
        self.workers.cancel_group(self, "capture")

    @work(thread=True, exclusive=True, group="capture")
    def _decode(self, flow: Flow, data: Optional[bytes]) -> None:
        # Moving on cancels this worker (exclusive), which a thread cannot be made to heed:
        # it looks before each long step, so paging through captures reads and decodes
        # only the one shown.
        worker = get_current_worker()
        result: Union[PngImage, str, None]
        try:
            if data is None and flow.response is not None:
                data = find_png(json.loads(payload_of(flow.response)))
            if worker.is_cancelled:
                return
            result = decode_png(data) if data is not None else None
        except PayloadReleased as exc:  # said, not kept: showing it again reads it anew
            self.app.call_from_thread(self._not_read, flow, str(exc))
            return
        except (ValueError, RecursionError):  # not JSON after all: no image to show
            result = None
        except PngError as exc:
            result = str(exc)
        if result is None:
            self.app.call_from_thread(self._no_image, flow)
        else:
            self.app.call_from_thread(self._decoded_one, flow, result)

    def _no_image(self, flow: Flow) -> None:
        self._no_image_in[flow.number] = None
        while len(self._no_image_in) > KEPT:
            self._no_image_in.popitem(last=False)
        if flow is self.flow:
            self.display = False

    def _not_read(self, flow: Flow, why: str) -> None:
        if flow is self.flow:
            self._draw(why)

    def _decoded_one(self, flow: Flow, result: Union[PngImage, str]) -> None:
        self._decoded[flow.number] = result
        while len(self._decoded) > KEPT:
            self._decoded.popitem(last=False)
        if flow is self.flow:
            self._draw(result)

    def _draw(self, result: Union[PngImage, str]) -> None:
        if isinstance(result, str):
            self.update(Text(f"Image: not shown ({result})", style="dim"))
            return
        title = Text(f"Image  {result.width}x{result.height} PNG", style="bold")
        self.update(Group(title, PngPreview(result, PREVIEW_ROWS)))


def _image_elided(frame: FrameSeen) -> bool:
    """Whether ``frame``'s message has a capture's ``image`` whose string was elided (a
    frame typed with its long strings left out: live over 1 MiB, or left in a recording)."""
    if not frame.elided:
        return False
    obj = getattr(frame.message, "obj", None)
    result = obj.get("result") if isinstance(obj, dict) else None
    image = result.get("image") if isinstance(result, dict) else None
    return isinstance(image, str) and image.startswith("<") and image.endswith(" bytes elided>")
