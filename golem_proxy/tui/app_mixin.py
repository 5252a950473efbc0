"""The base of the app's action mixins (copying, saving, debugging): the app itself to the
type checker, so a mixin's methods are checked against what `GolemProxyApp` has, and plain
``object`` at run time, where the mixins are mixed into it."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from textual.app import App

    AppMixin = App[None]
else:
    AppMixin = object

__all__ = ["AppMixin"]
