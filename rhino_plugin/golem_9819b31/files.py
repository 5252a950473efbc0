"""``files.*`` of golem-3dmcp@9819b31 (``handlers/files.py``).

The real handlers drive Rhino commands (``_-Open``, ``_-Import``, ``_-Export``) and report
what they can observe. The headless plugin writes and reads no files: saving records the path
as the document's path, importing adds no objects, and exports report the size of whatever is
already at the path (``-1`` when nothing is, as the real ``_file_size`` does).
"""

from __future__ import annotations

import os
from typing import Any

from ..document import Document
from .kit import Params

__all__ = ["FileHandlers"]


def _file_size(path: Any) -> int:
    try:
        return os.path.getsize(path)
    except Exception:
        return -1


def _exported(path: Any, count: int) -> dict[str, Any]:
    """What the export handlers answer once ``count`` objects went to ``path``."""
    return {
        "success": True,
        "file_path": str(path),
        "object_count": count,
        "file_size_bytes": _file_size(path),
    }


def _exists(path: Any) -> bool:
    try:
        return os.path.exists(path)
    except Exception:
        return False


class FileHandlers:
    def __init__(self, document: Document) -> None:
        self.doc = document
        self.modified = False

    def _path(self, p: Params, method: str) -> Any:
        path = p.get("file_path")
        if not path:
            raise ValueError(f"params['file_path'] is required for files.{method}")
        return path

    def _no_overwrite(self, p: Params, path: Any) -> None:
        if not p.get("overwrite", True) and _exists(path):
            raise ValueError(f"File already exists and overwrite=False: {path}")

    def get_document_path(self, p: Params) -> dict[str, Any]:
        path = self.doc.path
        name = os.path.basename(path) if path else None
        return {"file_path": path or None, "file_name": name or None, "is_modified": False}

    def save_document(self, p: Params) -> dict[str, Any]:
        if not self.doc.path:
            raise ValueError(
                "Document has no file path -- it has never been saved. "
                "Use files.save_document_as to save to a new path."
            )
        return {"success": True, "file_path": str(self.doc.path)}

    def save_document_as(self, p: Params) -> dict[str, Any]:
        path = p.get("file_path")
        if not path:
            raise ValueError("params['file_path'] is required for files.save_document_as")
        self._no_overwrite(p, path)
        self.doc.path = str(path)
        return {"success": True, "file_path": str(path)}

    def new_document(self, p: Params) -> dict[str, Any]:
        template = p.get("template_path") or p.get("template")
        self.doc.clear()
        return {"success": True, "template": str(template) if template else "_None"}

    def import_file(self, p: Params) -> dict[str, Any]:
        path = self._path(p, "import_file")
        return {"success": True, "file_path": str(path), "object_count": 0}

    def export_objects(self, p: Params) -> dict[str, Any]:
        path = self._path(p, "export_objects")
        guids = p.get("guids") or p.get("object_ids") or []
        if not guids:
            raise ValueError("params['guids'] must be a non-empty list for files.export_objects")
        self._no_overwrite(p, path)
        found = sum(1 for g in guids if str(g).strip("{}").lower() in self.doc.objects)
        if found == 0:
            raise ValueError("None of the provided GUIDs could be found in the document.")
        return _exported(path, found)

    def export_document(self, p: Params) -> dict[str, Any]:
        path = self._path(p, "export_document")
        selected_only = p.get("selected_only", False)
        self._no_overwrite(p, path)
        if selected_only:
            count = sum(1 for o in self.doc.objects.values() if o.selected)
        else:
            for obj in self.doc.objects.values():
                obj.selected = False
            count = len(self.doc.objects)
        return _exported(path, count)

    def export_selected(self, p: Params) -> dict[str, Any]:
        path = self._path(p, "export_selected")
        count = sum(1 for o in self.doc.objects.values() if o.selected)
        return _exported(path, count)

    def open_document(self, p: Params) -> dict[str, Any]:
        path = self._path(p, "open_document")
        return {"success": True, "file_path": str(path)}
