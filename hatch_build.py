"""Build hook: the wheel carries the sample recordings as ``golem_proxy/samples/``.

The samples live in ``recordings/`` at the top of the repository (scripts regenerate them
there); ``golem-proxy samples`` and ``sample:NAME`` find them inside an installed package. Only
the samples are shipped: a checkout's ``recordings/demo-*.jsonl`` are its user's own sessions
(a whole-directory ``force-include`` would copy whatever lies there into the wheel).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class SamplesBuildHook(BuildHookInterface):  # type: ignore[misc]
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel" or version != "standard":
            return  # an editable install reads recordings/ in the checkout itself
        for path in sorted((Path(self.root) / "recordings").glob("*.jsonl")):
            if path.is_file() and not path.name.startswith("demo-"):
                build_data["force_include"][str(path)] = f"golem_proxy/samples/{path.name}"
