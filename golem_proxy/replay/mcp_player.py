"""`mcp-verify`'s client side (mcp_verify.py `play`): the recorded steps sent to the server one
at a time, its lines read until each request's answer, what it asks of the client answered as
the recorded client answered it."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Optional

import trio

from .mcp_child import McpChild, Oversized
from .mcp_script import ClientStep, McpScript

if TYPE_CHECKING:
    from .mcp_verify import McpVerifyResult

__all__ = ["McpPlayer"]

NOT_FOUND = -32601


class McpPlayer:
    """Sends the steps and reads the server's lines until each request's answer."""

    def __init__(
        self, script: McpScript, child: McpChild, result: McpVerifyResult, timeout: float
    ) -> None:
        self.answers = {method: list(queue) for method, queue in script.client_answers.items()}
        self.child = child
        self.result = result
        self.timeout = timeout
        self.alive = True
        self.stuck: Optional[str] = None
        self.answer_line: Optional[bytes] = None
        """The line of the last answer `request` returned, as the server wrote it."""
        self.output_ended = False
        """The server's stdout ended while a request waited for its answer."""

    def gone_reason(self) -> str:
        """Why nothing more is sent: the server hung or went."""
        if self.stuck is not None:
            return self.stuck
        status = self.child.status
        if status is None:
            return "the server stopped reading its stdin"
        return f"the server exited (status {status})"

    async def request(self, step: ClientStep, payload: bytes) -> dict[str, Any] | str:
        """Send one step; for a request, the answer envelope, or why there is none. A
        server that takes longer than the timeout (to read the line or to answer it) is
        taken as stuck: the steps after it are not sent, so a hung server costs one
        timeout, not one per step."""
        self.answer_line = None
        with trio.move_on_after(self.timeout):
            return await self._exchange(step, payload)
        self.alive = False
        if step.is_request:
            self.stuck = f"the server left id {_short_id(step.id)} unanswered"
            return f"no answer within {self.timeout:g} s"
        self.stuck = "the server stopped reading its stdin"
        return f"not read within {self.timeout:g} s"

    async def _exchange(self, step: ClientStep, payload: bytes) -> dict[str, Any] | str:
        if not await self.child.send(payload):
            self.alive = False
            return f"not sent: {self.gone_reason()}"
        if not step.is_request:
            return {}
        while True:
            line = await self.child.receive()
            if line is None:
                self.alive = False
                self.output_ended = True
                await self._settle()
                status = self.child.status
                how = f"exited (status {status})" if status is not None else "closed stdout"
                return f"no answer: the server {how}"
            answer = await self._handle(line, step.id)
            if answer is not None:
                return answer

    async def _settle(self) -> None:
        process = self.child.process
        if process is not None:
            with trio.move_on_after(1.0):
                await process.wait()

    async def _handle(self, line: bytes | Oversized, ident: Any) -> Optional[dict[str, Any]]:
        if isinstance(line, Oversized):
            self._non_json(f"a line of {line.size} bytes, over the limit")
            return None
        try:
            obj = json.loads(line)
        except ValueError:
            self._non_json(line.decode("utf-8", "replace")[:120])
            return None
        if not isinstance(obj, dict):
            self._non_json(line.decode("utf-8", "replace")[:120])
            return None
        method = obj.get("method")
        if isinstance(method, str):
            if "id" in obj:
                await self._answer_server(obj["id"], method)
            return None  # a notification (progress, logging) or a request of the server's
        if "id" in obj and _same_id(obj["id"], ident):
            self.answer_line = line
            return obj
        return None  # an answer to nothing we asked: not ours to compare

    def _non_json(self, sample: str) -> None:
        self.result.non_json_lines += 1
        if not self.result.first_non_json:
            self.result.first_non_json = sample

    async def _answer_server(self, ident: Any, method: str) -> None:
        """Answer a server's request as the client did when recorded, or say we cannot."""
        queue = self.answers.get(method)
        if queue:
            reply = dict(queue.pop(0))
            reply["id"] = ident
        else:
            reply = {
                "jsonrpc": "2.0",
                "id": ident,
                "error": {"code": NOT_FOUND, "message": f"{method}: not in the recording"},
            }
        await self.child.send(json.dumps(reply, ensure_ascii=False).encode("utf-8"))


def _short_id(ident: Any) -> str:
    text = json.dumps(ident)
    return text if len(text) <= 40 else text[:39] + "…"


def _same_id(live: Any, recorded: Any) -> bool:
    return type(live) is type(recorded) and bool(live == recorded)
