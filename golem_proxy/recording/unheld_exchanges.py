"""Exchange lines that name frames the file does not hold before them (a request, an answer,
or both): nothing is paired, and a reader says so once, with the first such line, rather than
drop the line without a word. The answer it names, when the file holds it, is a row of its own
(an answer to no request read); a request it names, when held, waits on for its answer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..terminal import safe_text

__all__ = ["UnheldExchange", "UnheldExchanges"]


@dataclass(frozen=True)
class UnheldExchange:
    """An exchange line (its line number) naming ``request`` and ``answer`` of ``conn``, and
    which of them this reader held."""

    line: int
    conn: int
    route: str
    request: int
    answer: int
    request_held: bool
    answer_held: bool

    def describe(self) -> str:
        """``an exchange names request 5 and answer 1 of connection 1 (main), and the lines
        before it hold no request 5 waiting for an answer: nothing is paired`` (or, the
        request held, ``no answer 1 to it``)."""
        if not self.request_held:
            missing = f"no request {self.request} waiting for an answer"
        else:
            missing = f"no answer {self.answer} to it"
        where = f"connection {self.conn} ({safe_text(self.route, 60)})"
        return (
            f"an exchange names request {self.request} and answer {self.answer} of {where}, "
            f"and the lines before it hold {missing}: nothing is paired"
        )


class UnheldExchanges:
    """The first exchange line naming frames not held, and how many such lines were read."""

    def __init__(self) -> None:
        self.first: Optional[UnheldExchange] = None
        self.count = 0

    def see(self, found: UnheldExchange) -> None:
        self.count += 1
        if self.first is None:
            self.first = found
