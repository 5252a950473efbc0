"""The outcome of an exchange: what its answer means to the application, decided once.

A server may report a failure in its error envelope, or inside a *success* envelope: the
GOLEM plugin at 9819b31 returns its ``@wrap_handler`` error dict (``{"code": "INVALID_PARAMS",
"message": …}``) as the result, and a failed script as ``{"success": false, …}``. Which result
shapes mean failure is data of the protocol profile (`ResultFailureRule`); the profile's
``outcome`` applies them once, where the answer is decoded, and every view reads the
`Outcome` it carries.
"""

from __future__ import annotations

import abc
import enum
from dataclasses import dataclass
from typing import Any, Optional, Union

from .registry import Registry

__all__ = [
    "OK",
    "ErrorObjectInResult",
    "InStructuredContent",
    "IsErrorFlag",
    "Outcome",
    "OutcomeKind",
    "ResultFailureRule",
    "UnsuccessfulFlag",
]

Code = Union[int, str]


class OutcomeKind(enum.Enum):
    """What an answer says about its request, from the application's point of view."""

    OK = "ok"
    """A success, and its result does not report a failure."""
    ERROR = "error"
    """An error envelope."""
    ERROR_IN_RESULT = "error-in-result"
    """A success envelope whose result is an error object (the code is the result's)."""
    UNSUCCESSFUL = "unsuccessful"
    """A success envelope whose result says it did not succeed (``"success": false``)."""
    MALFORMED = "malformed"
    """Not a valid answer to this request (a malformed envelope, an id not echoed)."""


@dataclass(frozen=True)
class Outcome:
    """An answer's outcome. ``name`` is the profile's name for it (``ok``, a code's registry
    name, ``malformed:invalid-json``); ``code`` the error code on the wire (envelope or
    result), ``message`` the error message, when there is one."""

    kind: OutcomeKind
    name: str = "ok"
    code: Optional[Code] = None
    message: str = ""

    @property
    def failed(self) -> bool:
        """True for every outcome but `OutcomeKind.OK`."""
        return self.kind is not OutcomeKind.OK

    @property
    def text(self) -> str:
        """The status every view prints: ``ok``, ``INVALID_PARAMS``, ``INVALID_PARAMS (in
        result)``, ``success: false`` (``OPERATION_FAILED (success: false)`` with a code),
        ``malformed:KIND``. The one place this text is made."""
        kind = self.kind
        if kind is not OutcomeKind.OK and _reads_as_success(self.name):
            # A failure never reads as a success: a hostile or confused server's error
            # envelope whose code is "OK" (or a result's that is "ok"), or a bare number
            # (the MCP SDK answers a cancelled call with code 0), says what it is.
            return f"{kind.value} (code {self.name})"
        if kind is OutcomeKind.ERROR_IN_RESULT:
            # A flag with no code (MCP's ``isError``) names itself; a code is marked as the
            # result's, not the envelope's.
            return f"{self.name} (in result)" if self.code is not None else self.name
        if kind is OutcomeKind.UNSUCCESSFUL:
            return f"{self.name} (success: false)" if self.code is not None else "success: false"
        return self.name


OK = Outcome(OutcomeKind.OK)

_SUCCESS_WORDS = frozenset(("ok", "success", "succeeded"))
"""Names that read as a success in a status column, casefolded, letters only."""


def _reads_as_success(name: str) -> bool:
    """Whether ``name`` may read as a success word: one of `_SUCCESS_WORDS` once its
    letters alone are kept (``Ok.``, ``success!``), any name with a character that is not
    ASCII (a Cyrillic or fullwidth OK, or one followed by a zero-width space, reads as OK on
    a terminal, and no code the profiles register has one), or a name with no letter at
    all: a bare code (``0`` reads as an exit status's success; ``-32000`` says nothing of
    failing)."""
    if not name.isascii():
        return True
    letters = "".join(char for char in name if char.isalpha())
    return not letters or letters.casefold() in _SUCCESS_WORDS


class ResultFailureRule(abc.ABC):
    """A result shape that reports a failure inside a success envelope. A profile lists its
    rules in ``result_failures``; the first that matches decides."""

    @abc.abstractmethod
    def match(self, result: Any, registry: Registry) -> Optional[Outcome]:
        """The failure ``result`` reports, or None when it does not have this shape."""


@dataclass(frozen=True)
class ErrorObjectInResult(ResultFailureRule):
    """The result *is* an error object: a string ``code`` and a string ``message``, and no
    members but ``allowed`` (the real ``make_error``: code, message, optional details)."""

    allowed: tuple[str, ...] = ("code", "message", "details")
    success_codes: tuple[str, ...] = ("OK",)

    def match(self, result: Any, registry: Registry) -> Optional[Outcome]:
        if not isinstance(result, dict):
            return None
        code = result.get("code")
        message = result.get("message")
        if not isinstance(code, str) or not isinstance(message, str):
            return None
        if code in self.success_codes or any(key not in self.allowed for key in result):
            return None
        return Outcome(OutcomeKind.ERROR_IN_RESULT, registry.name_of(code), code, message)


@dataclass(frozen=True)
class UnsuccessfulFlag(ResultFailureRule):
    """The result is an object whose ``member`` is exactly ``false``. Its message is the first
    string among ``message_members``; a string ``code`` member (the real viewport handlers
    send one) is kept as its code."""

    member: str = "success"
    message_members: tuple[str, ...] = ("error", "stderr", "message")

    def match(self, result: Any, registry: Registry) -> Optional[Outcome]:
        if not isinstance(result, dict) or result.get(self.member, True) is not False:
            return None
        message = next(
            (
                value
                for value in (result.get(key) for key in self.message_members)
                if isinstance(value, str) and value
            ),
            "",
        )
        code = result.get("code")
        if isinstance(code, str):
            return Outcome(OutcomeKind.UNSUCCESSFUL, registry.name_of(code), code, message)
        return Outcome(OutcomeKind.UNSUCCESSFUL, "success: false", None, message)


@dataclass(frozen=True)
class IsErrorFlag(ResultFailureRule):
    """MCP's tool failure: a ``tools/call`` result whose ``isError`` is true (what the model is
    told, FastMCP's "Error executing tool …" included). Its message is the first text item of
    ``content``."""

    def match(self, result: Any, registry: Registry) -> Optional[Outcome]:
        if not isinstance(result, dict) or result.get("isError") is not True:
            return None
        message = ""
        content = result.get("content")
        if isinstance(content, list):
            for item in content:
                if isinstance(item, dict) and isinstance(item.get("text"), str):
                    message = item["text"]
                    break
        return Outcome(OutcomeKind.ERROR_IN_RESULT, "isError", None, message)


@dataclass(frozen=True)
class InStructuredContent(ResultFailureRule):
    """An MCP tool's result whose ``structuredContent`` has the failure shape of ``rule``,
    though ``isError`` is not set: a server that passes its backend's answer through as the
    tool's return value (GOLEM-3DMCP returns the plugin's error dict, which the model reads
    as the tool's answer) reports the failure there, and only there."""

    rule: ResultFailureRule

    def match(self, result: Any, registry: Registry) -> Optional[Outcome]:
        if not isinstance(result, dict):
            return None
        return self.rule.match(result.get("structuredContent"), registry)
