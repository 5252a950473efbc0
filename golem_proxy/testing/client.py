"""A blocking GOLEM client that behaves on the wire like the GOLEM MCP server's connection:
UUID4 ids, a ``ping`` right after connecting, one request at a time, a receive timeout per
command, and up to three reconnects on a broken pipe or a reset. `McpTools` sends what the
GOLEM MCP server's tools send (golem-3dmcp@9819b31): their method names and parameter shapes,
defaults included, even where the plugin reads other names. Used by the demo, the sample
recordings and tests that need a realistic client."""

from __future__ import annotations

import socket
import uuid
from dataclasses import dataclass, field
from typing import Any, Optional

from golem_core.blocking import MessageReader, send_message
from golem_core.messages import ErrorResponse, Malformed, Message, Response, Role

__all__ = [
    "GolemClient",
    "McpTools",
    "RhinoCommandError",
    "RhinoConnectionError",
    "RhinoTimeoutError",
]

MAX_AUTO_RECONNECT_ATTEMPTS = 3


class RhinoConnectionError(ConnectionError):
    """The plugin could not be reached (or stayed unreachable after reconnecting)."""


class RhinoTimeoutError(TimeoutError):
    """No response within the command's timeout (never retried)."""


class RhinoCommandError(Exception):
    """The plugin answered with an error envelope."""

    def __init__(self, code: Any, message: str, details: Any = None) -> None:
        super().__init__(f"[{code}] {message}")
        self.code = code
        self.message = message
        self.details = details


@dataclass(eq=False)
class GolemClient:
    """One connection to a GOLEM plugin channel. ``timeout`` bounds connecting and its ping;
    ``ping_method`` is what the connect check sends (the Grasshopper server of
    golem-3dmcp@9819b31 answers `gh.ping`, not `ping`)."""

    host: str = "127.0.0.1"
    port: int = 9876
    timeout: float = 10.0
    ping_method: str = "ping"
    reconnects: int = field(init=False, default=0)
    _sock: Optional[socket.socket] = field(init=False, repr=False, default=None)
    _reader: Optional[MessageReader] = field(init=False, repr=False, default=None)

    def connect(self) -> None:
        """Open the socket and check the plugin answers ``ping``. Raises RhinoConnectionError."""
        self.close()
        try:
            sock = socket.create_connection((self.host, self.port), timeout=self.timeout)
        except OSError as exc:
            raise RhinoConnectionError(f"cannot reach {self.host}:{self.port}: {exc}") from exc
        self._sock = sock
        self._reader = MessageReader(sock)
        try:
            self._roundtrip(self.ping_method, {}, self.timeout)
        except (OSError, RhinoTimeoutError, RhinoCommandError) as exc:
            self.close()
            raise RhinoConnectionError(f"no ping answer from {self.host}:{self.port}") from exc

    def is_connected(self) -> bool:
        return self._sock is not None

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
        self._sock = None
        self._reader = None

    def __enter__(self) -> GolemClient:
        self.connect()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def send_command(
        self, method: str, params: Optional[dict[str, Any]] = None, timeout: float = 30.0
    ) -> Any:
        """Call ``method`` and return its result. Raises RhinoCommandError for an error answer,
        RhinoTimeoutError, or RhinoConnectionError once reconnecting gave up."""
        attempts = 0
        while True:
            if self._sock is None:
                self.connect()
            try:
                return self._roundtrip(method, params or {}, timeout)
            except (BrokenPipeError, ConnectionResetError) as exc:
                attempts += 1
                if attempts > MAX_AUTO_RECONNECT_ATTEMPTS:
                    raise RhinoConnectionError(f"{method}: connection lost: {exc}") from exc
                self.reconnects += 1
                self.close()

    def _roundtrip(self, method: str, params: dict[str, Any], timeout: float) -> Any:
        assert self._sock is not None and self._reader is not None
        request_id = str(uuid.uuid4())
        send_message(self._sock, {"id": request_id, "method": method, "params": params})
        self._sock.settimeout(timeout)
        try:
            reply = self._reader.read_message(Role.RESPONSE)
        except socket.timeout as exc:
            raise RhinoTimeoutError(f"{method}: no response within {timeout:g} s") from exc
        if reply is None:
            raise ConnectionResetError(f"{method}: the plugin closed the connection")
        return _result(reply)


def _result(reply: Message) -> Any:
    if isinstance(reply, Response):
        return reply.result
    if isinstance(reply, ErrorResponse):
        raise RhinoCommandError(reply.error.code, reply.error.message, reply.error.details)
    assert isinstance(reply, Malformed)
    raise RhinoCommandError("MALFORMED", reply.detail)


Point = dict[str, float]


def _xyz(x: float, y: float, z: float) -> Point:
    return {"x": x, "y": y, "z": z}


@dataclass(eq=False)
class McpTools:
    """The GOLEM MCP server's tools (``mcp_server/tools/*.py`` at 9819b31) over a client: each
    method takes the tool's arguments with the tool's defaults and sends exactly the request
    the tool sends, so a session shows the real server's drift (names the plugin does not
    register, parameters its handlers do not read) as the plugin answers it."""

    client: GolemClient

    def _send(self, method: str, params: dict[str, Any]) -> Any:
        return self.client.send_command(method, params)

    def get_document_info(self) -> Any:
        return self._send("scene.get_document_info", {})

    def create_layer(
        self,
        name: str,
        color_r: int = 0,
        color_g: int = 0,
        color_b: int = 0,
        visible: bool = True,
        locked: bool = False,
        parent: Optional[str] = None,
    ) -> Any:
        color = {"r": color_r, "g": color_g, "b": color_b, "a": 255}
        params = {"name": name, "color": color, "visible": visible, "locked": locked}
        return self._send("scene.create_layer", {**params, "parent": parent})

    def list_objects(
        self,
        layer: Optional[str] = None,
        object_type: Optional[str] = None,
        name: Optional[str] = None,
        visible_only: bool = False,
        unlocked_only: bool = False,
    ) -> Any:
        return self._send(
            "scene.list_objects",
            {
                "layer": layer,
                "object_type": object_type,
                "name": name,
                "visible_only": visible_only,
                "unlocked_only": unlocked_only,
            },
        )

    def get_object_info(self, guid: str) -> Any:
        return self._send("scene.get_object_info", {"guid": guid})

    def select_objects(self, guids: list[str]) -> Any:
        return self._send("scene.select_objects", {"guids": guids})

    def create_box(
        self,
        corner_x: float = 0.0,
        corner_y: float = 0.0,
        corner_z: float = 0.0,
        width: float = 1.0,
        depth: float = 1.0,
        height: float = 1.0,
        layer: Optional[str] = None,
        name: Optional[str] = None,
    ) -> Any:
        return self._send(
            "geometry.create_box",
            {
                "corner": _xyz(corner_x, corner_y, corner_z),
                "width": width,
                "depth": depth,
                "height": height,
                "layer": layer,
                "name": name,
            },
        )

    def create_sphere(
        self,
        center_x: float = 0.0,
        center_y: float = 0.0,
        center_z: float = 0.0,
        radius: float = 1.0,
        layer: Optional[str] = None,
        name: Optional[str] = None,
    ) -> Any:
        return self._send(
            "geometry.create_sphere",
            {
                "center": _xyz(center_x, center_y, center_z),
                "radius": radius,
                "layer": layer,
                "name": name,
            },
        )

    def create_torus(
        self,
        center_x: float = 0.0,
        center_y: float = 0.0,
        center_z: float = 0.0,
        major_radius: float = 2.0,
        minor_radius: float = 0.5,
        layer: Optional[str] = None,
        name: Optional[str] = None,
    ) -> Any:
        return self._send(
            "geometry.create_torus",
            {
                "center": _xyz(center_x, center_y, center_z),
                "major_radius": major_radius,
                "minor_radius": minor_radius,
                "layer": layer,
                "name": name,
            },
        )

    def move_objects(
        self,
        guids: list[str],
        translation_x: float = 0.0,
        translation_y: float = 0.0,
        translation_z: float = 0.0,
    ) -> Any:
        translation = _xyz(translation_x, translation_y, translation_z)
        return self._send("manipulation.move_objects", {"guids": guids, "translation": translation})

    def boolean_union(self, guids: list[str], delete_input: bool = True) -> Any:
        return self._send(
            "operations.boolean_union", {"guids": guids, "delete_input": delete_input}
        )

    def boolean_difference(
        self, target_guids: list[str], cutter_guids: list[str], delete_input: bool = True
    ) -> Any:
        return self._send(
            "operations.boolean_difference",
            {
                "target_guids": target_guids,
                "cutter_guids": cutter_guids,
                "delete_input": delete_input,
            },
        )

    def capture_viewport(
        self,
        view_name: Optional[str] = None,
        width: int = 1920,
        height: int = 1080,
        display_mode: Optional[str] = None,
        transparent_background: bool = False,
    ) -> Any:
        return self._send(
            "viewport.capture",
            {
                "view_name": view_name,
                "width": width,
                "height": height,
                "display_mode": display_mode,
                "transparent_background": transparent_background,
            },
        )

    def add_named_view(
        self, view_name_to_save_as: str, source_view_name: Optional[str] = None
    ) -> Any:
        return self._send(
            "viewport.add_named_view",
            {"save_as": view_name_to_save_as, "source_view_name": source_view_name},
        )

    def restore_named_view(
        self, named_view: str, target_view_name: Optional[str] = None, animate: bool = True
    ) -> Any:
        return self._send(
            "viewport.restore_named_view",
            {"named_view": named_view, "target_view_name": target_view_name, "animate": animate},
        )

    # Grasshopper methods go on the main connection, as the MCP server sends them.
    def open_grasshopper_definition(self, file_path: str) -> Any:
        return self._send("grasshopper.open_definition", {"file_path": file_path})

    def list_grasshopper_components(
        self, definition_id: Optional[str] = None, component_type: Optional[str] = None
    ) -> Any:
        return self._send(
            "grasshopper.list_components",
            {"definition_id": definition_id, "component_type": component_type},
        )

    def set_grasshopper_input(
        self,
        component_name: str,
        value: Any,
        definition_id: Optional[str] = None,
        run_after: bool = True,
    ) -> Any:
        return self._send(
            "grasshopper.set_input",
            {
                "component_name": component_name,
                "value": value,
                "definition_id": definition_id,
                "run_after": run_after,
            },
        )

    def run_grasshopper_definition(
        self,
        file_path: Optional[str] = None,
        definition_id: Optional[str] = None,
        inputs: Optional[dict[str, Any]] = None,
        timeout_seconds: int = 60,
    ) -> Any:
        return self._send(
            "grasshopper.run_definition",
            {
                "file_path": file_path,
                "definition_id": definition_id,
                "inputs": inputs or {},
                "timeout_seconds": timeout_seconds,
            },
        )

    def bake_grasshopper_objects(
        self,
        component_names: Optional[list[str]] = None,
        definition_id: Optional[str] = None,
        layer: Optional[str] = None,
    ) -> Any:
        return self._send(
            "grasshopper.bake_objects",
            {"component_names": component_names, "definition_id": definition_id, "layer": layer},
        )

    def close_grasshopper_definition(self, definition_id: Optional[str] = None) -> Any:
        return self._send("grasshopper.close_definition", {"definition_id": definition_id})
