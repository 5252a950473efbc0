"""What a protocol profile is: framing + envelope rules + error-code registry + id correlation,
and what the peers of the protocol do (how a client mints ids, which channels and built-in
methods a server has, how it answers what it cannot serve).

Everything protocol-specific in golem-proxy goes through a `Profile`; the relay, recorder,
replay server and TUI only ever call these methods and never compare a profile's name.
"""

from __future__ import annotations

import abc
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any, Optional

from ..contract import Rule, Violation
from ..decoders import Decoder, decoder_for
from ..framing import FrameError, FrameErrorKind, Framing, find_frame_start
from ..messages import (
    ErrorResponse,
    Malformed,
    MalformedKind,
    Message,
    Notification,
    OpaqueCheck,
    Request,
    Response,
    Role,
    decode_json,
    elide_long_strings,
    method_of,
)
from ..outcome import OK, Outcome, OutcomeKind, ResultFailureRule
from ..registry import Registry
from .members import id_key

__all__ = ["DefaultRoute", "Profile"]

_REPLY_MEMBERS = ("id", "result", "error")
"""The members of which a reply has at least one, when replies go by id: a JSON-RPC
response's, also when malformed."""

INTERNAL_ERROR_CODE = -32603
"""JSON-RPC's internal error; the GOLEM server loop uses it too."""

_REQUEST = Role.REQUEST
_RESPONSE = Role.RESPONSE
# json.loads(str) without its per-call argument handling.
_json_decode = json.JSONDecoder().decode


@dataclass(frozen=True)
class DefaultRoute:
    """A route the proxy serves when none is given, and how a client finds it.

    ``listen`` and ``upstream`` are address specs (``HOST:PORT`` or ``unix:PATH``).
    ``client_env`` names the client's variable that points it at an endpoint; ``client_env_value``
    says what that variable holds: ``"port"`` (a TCP port) or ``"path"`` (a Unix socket path).
    """

    name: str
    listen: str
    upstream: str
    client_env: str = ""
    client_env_value: str = "port"
    client_host_env: str = ""
    """The client's variable for the host of a TCP endpoint (GOLEM_RHINO_HOST), if it has one."""


class Profile(abc.ABC):
    """A protocol profile. Stateless and immutable: one instance serves every connection."""

    name: str
    framing: Framing
    default_cap: int
    registry: Registry
    rules: tuple[Rule, ...]
    """Every contract rule this profile's checks report (`check_message`, `check_exchange`,
    `frame_violation`)."""
    channels: tuple[str, ...] = ("main",)
    """The route names of the endpoints a server of this protocol listens on, the main one
    first (GOLEM adds its Grasshopper channel, ``gh``)."""
    clients_read_past_answers: bool = True
    """Whether a client may keep reading once its last request is answered (to the end of the
    stream, for server notifications). A proxy must then pass a server's close on at once; when
    it is False, it may hold the close of an idle connection until the client sends again."""
    tool_layer: bool = False
    """Whether this protocol is the MCP layer of a two-layer session (`golem-proxy mcp`): its
    ``tools/call`` requests are what the other routes' frames are attributed to."""
    servers_send_requests: bool = False
    """Whether a server may send requests and notifications of its own (JSON-RPC 2.0: a
    progress or log notification, a ``ping`` the client answers). Then a message's members,
    not the direction it travels, say whether it is a request or a response, and a client's
    frame may answer a request of the server. False: every client frame is a request, every
    server frame a response (GOLEM)."""
    replies_by_id: bool = False
    """Whether this protocol's clients hand a reply to the request whose id it carries, and to
    nothing else (MCP: a reply with an unknown id, or a line that is no JSON object, is not
    an answer, and a client reads on). False: the client takes the next reply it reads as the
    answer to its one outstanding request, whatever it holds (GOLEM's and Scrybe's sequential
    clients), so such a reply answers the only request outstanding."""
    builtin_methods: tuple[str, ...] = ()
    """Methods every server of this protocol answers whatever it registers (GOLEM: ``ping``,
    ``shutdown``, ``list_methods``); empty when the protocol has none."""

    channel_builtins: Mapping[str, tuple[str, ...]] = MappingProxyType({})
    """Per channel (route name), the methods its server answers itself whatever the plugin
    registers, when they differ from `builtin_methods` (GOLEM's Grasshopper server answers
    ``gh.ping`` and ``gh.shutdown``). See `builtins_of`."""
    result_failures: tuple[ResultFailureRule, ...] = ()
    """The result shapes that report a failure inside a success envelope, tried in order by
    `outcome` (GOLEM: the plugin's error dict and ``"success": false``); empty when a success
    envelope always means success."""

    @property
    def second_channel(self) -> Optional[str]:
        """The channel beside the main one (GOLEM's ``gh``), or None for a single socket."""
        return self.channels[1] if len(self.channels) > 1 else None

    def builtins_of(self, route: str) -> tuple[str, ...]:
        """The methods the server behind ``route`` answers itself (never drift against a
        method catalogue): its channel's, or, for a route named after no channel, those of
        every channel."""
        table = self.channel_builtins
        if not table:
            return self.builtin_methods
        if route in table:
            return table[route]
        return tuple(name for names in table.values() for name in names)

    def default_routes(self, env: Mapping[str, str]) -> tuple[DefaultRoute, ...]:
        """The routes to serve when the user gives none, resolved against the environment
        ``env`` (where a client would look for its server). Empty: the user must give one."""
        return ()

    def new_decoder(self, cap: Optional[int] = None, *, skip_oversized: bool = True) -> Decoder:
        """A fresh incremental decoder for one direction of one connection."""
        return decoder_for(
            self.framing, self.default_cap if cap is None else cap, skip_oversized=skip_oversized
        )

    def find_frame_start(self, data: bytes) -> Optional[int]:
        """Where a frame plausibly starts in ``data``, taken from the middle of a stream after
        a gap in what was seen (see `golem_core.framing.find_frame_start`), or None."""
        return find_frame_start(self.framing, data, self.default_cap)

    @abc.abstractmethod
    def frame_payload(self, payload: bytes) -> bytes:
        """Wrap an encoded payload in this profile's framing."""

    @abc.abstractmethod
    def encode_payload(self, obj: Any) -> bytes:
        """Serialise a message object the way this protocol's reference peers do."""

    def encode(self, obj: Any) -> bytes:
        """Serialise and frame a message object: the exact bytes to put on the wire."""
        return self.frame_payload(self.encode_payload(obj))

    def parse(self, payload: bytes, role: Optional[Role]) -> Message:
        """Type a payload. ``role`` is what the direction implies; None guesses from the
        members (``method`` → request). Never raises."""
        try:
            obj = _json_decode(payload.decode("utf-8"))
        except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
            # The rare path: let decode_json classify and describe the failure.
            obj, bad = decode_json(payload)
            if bad is not None:
                return replace(bad, role=role)
        return self.parse_decoded(obj, role)

    def parse_decoded(self, obj: Any, role: Optional[Role]) -> Message:
        """`parse` for a payload already decoded from JSON (by a faster decoder that accepts
        exactly what ``json.loads`` accepts, or less: anything it refuses goes to `parse`)."""
        if role is None:
            role = _REQUEST if isinstance(obj, dict) and "method" in obj else _RESPONSE
        elif self.servers_send_requests and isinstance(obj, dict):
            role = _role_of_members(obj, role)
        if role is _REQUEST:
            return self.parse_request(obj)
        return self.parse_response(obj)

    def parse_elided(
        self,
        payload: bytes,
        role: Optional[Role],
        min_length: int,
        is_opaque: Optional[OpaqueCheck] = None,
    ) -> tuple[Message, int]:
        """`parse`, with long opaque strings replaced by placeholders first (see
        `elide_long_strings`, which ``is_opaque`` is given to). Returns the message and the
        number of bytes elided; when that is 0 the message is exactly `parse`'s."""
        skeleton, elided = elide_long_strings(payload, min_length, is_opaque)
        return self.parse(skeleton if elided else payload, role), elided

    @abc.abstractmethod
    def parse_request(self, obj: Any) -> Message:
        """Type a decoded JSON value expected to be a request."""

    @abc.abstractmethod
    def parse_response(self, obj: Any) -> Message:
        """Type a decoded JSON value expected to be a response."""

    @abc.abstractmethod
    def check_message(self, message: Message, payload: bytes = b"") -> list[Violation]:
        """Violations of the per-message rules (the envelope is already typed in ``message``).
        ``payload`` is the message's bytes, or them with long opaque strings elided
        (`elide_long_strings`): a rule that searches it must find in both what it finds in one,
        as a search for a byte that is not an opaque character does."""

    def check_server_request(self, message: Message, payload: bytes = b"") -> list[Violation]:
        """Violations of a request or notification the server sent (see
        `servers_send_requests`): its envelope only, since the method table lists what the
        server serves, not what it may ask of its client."""
        if isinstance(message, (Request, Notification)):
            return []
        return self.check_message(message, payload)

    @abc.abstractmethod
    def check_exchange(self, request: Message, response: Message) -> list[Violation]:
        """Violations that need both sides: the id echoed, the code set for the method, …"""

    @abc.abstractmethod
    def frame_violation(self, error: FrameError) -> Violation:
        """The violation a framing error stands for."""

    @abc.abstractmethod
    def malformed_outcome(self, kind: MalformedKind) -> str:
        """This protocol's own name for a malformed kind."""

    def frame_error_outcome(self, kind: FrameErrorKind) -> str:
        return {FrameErrorKind.OVERSIZED: "FrameTooLarge", FrameErrorKind.TRUNCATED: "Truncated"}[
            kind
        ]

    def correlation_key(self, message: Message) -> Optional[Any]:
        """A hashable key pairing a response with its request, or None when the message
        carries no usable id. ``1`` and ``"1"`` are different keys, as on the wire."""
        return id_key(message.id)

    def expects_response(self, message: Message) -> bool:
        """False for a message nothing answers, which pairing must not hold on to: a request
        the protocol never answers (a JSON-RPC notification), and a response (a client's
        answer to its server travels where requests do)."""
        return message.role is not _RESPONSE and not isinstance(message, Notification)

    def is_answer_to(self, message: Message, wanted: Optional[Any]) -> bool:
        """Whether ``message``, read from a server after sending a request whose correlation
        key is ``wanted``, is its answer: a reply with that key, or a reply with no usable id
        (the answer to a request the server could not read; so is the reply the profile gives
        to an unreadable request, `answers_unparseable`, when ``wanted`` is None, and, where
        the client takes the next reply, whatever ``wanted`` is). Never a request or
        notification of the server's own (MCP's progress messages, its ``ping``), nor, where
        replies go by id, a line that is no reply (`is_reply`)."""
        if message.role is _REQUEST or not self.is_reply(message):
            return False  # where replies go by id, a stray line answers nothing
        key = self.correlation_key(message)
        if key is None:  # naming a method, it is no reply (whatever the profile types it as)
            return not (isinstance(message.obj, dict) and "method" in message.obj)
        if wanted is None:  # a request with no id read: its answer is the one to such a request
            return self.answers_unparseable(message)
        if key == wanted:
            return True
        # A sequential client's server saying it could not read what was sent (Scrybe's id-0
        # parse error) answers it, whatever id was sent.
        return not self.replies_by_id and self.answers_unparseable(message)

    def answers_unparseable(self, message: Message) -> bool:
        """True when ``message`` is the reply a server gives to a request it could not parse
        (GOLEM: a null id)."""
        return message.id is None

    def answers_this_unparseable(self, answer: Message, request: Message) -> bool:
        """Whether ``answer``, the reply to a request that could not be parsed
        (`answers_unparseable`), may be the reply to ``request``, one that could not be. Yes,
        unless the protocol tells which (`jsonrpc_ndjson`)."""
        return True

    def is_reply(self, message: Message) -> bool:
        """Whether ``message``, typed a response, is a reply at all: pairing looks for the
        request it answers, and one that answers none is an orphan. Always, unless replies go
        by id (`replies_by_id`): then only a JSON object with an ``id``, a ``result`` or an
        ``error`` is one (or an array: a JSON-RPC batch's answer). A line that is neither (a
        server's stray print on stdout, or a log line printed as JSON such as
        ``{"status": "starting"}``) answers nothing and is no orphan either."""
        if not self.replies_by_id:
            return True
        obj = message.obj
        if isinstance(obj, dict):
            return any(member in obj for member in _REPLY_MEMBERS)
        return isinstance(obj, list)

    @abc.abstractmethod
    def request_ids(self) -> Iterator[Any]:
        """A fresh, endless source of request ids, minted as this protocol's reference client
        does (one source per session: ids must not repeat within it)."""

    @abc.abstractmethod
    def request(self, request_id: Any, method: str, params: Any) -> dict[str, Any]:
        """A request envelope, members in the order the reference client writes them."""

    @abc.abstractmethod
    def success(self, request_id: Any, result: Any) -> dict[str, Any]:
        """A success envelope for ``request_id``."""

    @abc.abstractmethod
    def error(
        self, request_id: Any, code: Any, message: str, details: Any = None
    ) -> dict[str, Any]:
        """An error envelope for ``request_id``."""

    @abc.abstractmethod
    def method_not_found(self, request_id: Any, method: str) -> dict[str, Any]:
        """The envelope a real server of this protocol sends for an unknown method."""

    @abc.abstractmethod
    def unparseable_request(self, request: Malformed) -> Optional[dict[str, Any]]:
        """What a real server answers to a request it could not parse (None: it closes)."""

    def internal_error(
        self, request_id: Any, reason: object, details: Any = None
    ) -> dict[str, Any]:
        """What a server sends when it fails outside any handler (a reply it cannot encode, a
        bug of its own): ``"Internal error: <reason>"`` with JSON-RPC's -32603, which both
        supported protocols use for it."""
        return self.error(request_id, INTERNAL_ERROR_CODE, f"Internal error: {reason}", details)

    def answer_by_hand(self, request_id: Any) -> dict[str, Any]:
        """What a user answering a held request by hand starts from (the TUI's ``n``): a
        failure as a real server of this protocol sends one, ready to be edited (here the
        internal error every supported protocol has)."""
        return self.internal_error(request_id, "answered by hand")

    @abc.abstractmethod
    def miss_error(self, request_id: Any, method: str, explanation: str) -> dict[str, Any]:
        """What a stand-in server (replay) answers to a request it has no answer for, with
        ``explanation`` (why nothing matched) as the message."""

    def with_id(self, response_obj: dict[str, Any], request_id: Any) -> dict[str, Any]:
        """A copy of a recorded response object carrying a live request's id."""
        out = dict(response_obj)
        out["id"] = request_id
        return out

    def describe(self, message: Message) -> str:
        """A short status for logs and tables: ``ok``, the error code's name, or the
        malformed kind."""
        if isinstance(message, Response):
            return "ok"
        if isinstance(message, ErrorResponse):
            return self.registry.name_of(message.error.code)
        if isinstance(message, Malformed):
            return f"malformed:{message.kind.value}"
        if isinstance(message, Notification):
            return "notification"
        return "request"

    def result_outcome(self, result: Any) -> Outcome:
        """The outcome of a success envelope carrying ``result``: the failure the first
        matching `result_failures` rule reads in it, or ok."""
        for rule in self.result_failures:
            found = rule.match(result, self.registry)
            if found is not None:
                return found
        return OK

    def outcome(self, request: Optional[Message], response: Message) -> Outcome:
        """What ``response`` means as the answer to ``request`` (None for an orphan): an error
        envelope, a malformed answer, a failure reported in the result (`result_failures`)
        or ok. The one decision every view reads; a profile whose clients type a reply by
        comparing it with the request (an id not echoed) extends it."""
        if isinstance(response, Response):
            return self.result_outcome(response.result)
        if isinstance(response, ErrorResponse):
            error = response.error
            return Outcome(
                OutcomeKind.ERROR, self.registry.name_of(error.code), error.code, error.message
            )
        detail = response.detail if isinstance(response, Malformed) else ""
        return Outcome(OutcomeKind.MALFORMED, self.describe(response), message=detail)

    def method_of(self, message: Message) -> Optional[str]:
        """The method ``message`` names (see `golem_core.messages.method_of`)."""
        return method_of(message)

    def ids_equal(self, a: Any, b: Any) -> bool:
        return type(a) is type(b) and a == b


def _role_of_members(obj: dict[str, Any], role: Role) -> Role:
    """What a JSON-RPC object is by its members, whichever way it travels: a ``method`` without
    ``result`` or ``error`` is a request (or notification), a ``result`` or ``error`` without
    ``method`` a response; anything else is what its direction implies (``role``), so that a
    broken frame is judged by the rules of the side it came from."""
    if role is _RESPONSE:
        if "method" in obj and "result" not in obj and "error" not in obj:
            return _REQUEST
    elif "method" not in obj and ("result" in obj or "error" in obj):
        return _RESPONSE
    return role
