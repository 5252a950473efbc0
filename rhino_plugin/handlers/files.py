"""``files.*`` that make sense without a disk-backed Rhino document.

``files.get_document_path`` reports the document's path (None: never saved) and
``files.new_document`` empties the document. Opening, saving, importing and exporting would
need real file formats; they stay NOT_IMPLEMENTED rather than pretend to write a file.
"""

from __future__ import annotations

from typing import Any

from golem_core.dispatcher import Handler
from golem_core.errors import InvalidParams

from ..document import Document
from ..params import opt_str

__all__ = ["FileHandlers"]

UNIT_SYSTEMS = ("Millimeters", "Centimeters", "Meters", "Inches", "Feet")


class FileHandlers:
    """File methods over one `Document`."""

    def __init__(self, document: Document) -> None:
        self.doc = document

    def table(self) -> dict[str, Handler]:
        """Method name → handler."""
        return {
            "files.get_document_path": self.get_document_path,
            "files.new_document": self.new_document,
        }

    def get_document_path(self, params: dict[str, Any]) -> dict[str, Any]:
        path = self.doc.path
        name = path.replace("\\", "/").rsplit("/", 1)[-1] if path else None
        return {"file_path": path, "file_name": name, "saved": path is not None}

    def new_document(self, params: dict[str, Any]) -> dict[str, Any]:
        template = opt_str(params, "template_path") or opt_str(params, "template")
        units = opt_str(params, "units")
        if units is not None and units.capitalize() not in UNIT_SYSTEMS:
            raise InvalidParams(
                f"Parameter 'units' must be one of {', '.join(UNIT_SYSTEMS)}.", "units"
            )
        self.doc.clear()
        if units is not None:
            self.doc.units = units.capitalize()
        return {"success": True, "template": template, "units": self.doc.units}
