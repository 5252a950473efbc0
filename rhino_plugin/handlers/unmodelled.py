"""Handlers for catalogue methods the headless document does not model.

They are registered (so `list_methods` shows the whole catalogue) and answer NOT_IMPLEMENTED
naming the method: never a fake success a client could mistake for real geometry work.
"""

from __future__ import annotations

from typing import Any

from golem_core.dispatcher import Handler
from golem_core.errors import NotImplementedMethod

__all__ = ["not_implemented"]


def not_implemented(method: str) -> Handler:
    """A handler that always raises NotImplementedMethod naming ``method``."""

    def handle(params: dict[str, Any]) -> Any:
        raise NotImplementedMethod(
            f"{method} is not implemented by the headless plugin.", {"method": method}
        )

    return handle
