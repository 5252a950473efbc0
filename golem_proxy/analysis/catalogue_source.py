"""The Python sources of a checkout, parsed once: modules by dotted name, their functions and
imports, a resolver that follows a name to the function it means inside the scanned code, and
the small walks over a function the handler and tool finders share. Nothing is imported or
run."""

from __future__ import annotations

import ast
import errno
import hashlib
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional, Union

from golem_core.regular_files import FileTooLarge, NotARegularFile, read_regular

from ..terminal import format_size
from .catalogue_values import FunctionRef

__all__ = [
    "MAX_SOURCE_BYTES",
    "METHOD_NAME",
    "FuncNode",
    "Module",
    "SourceTree",
    "dict_keys",
    "git_commit",
    "own_nodes",
]

MAX_SOURCE_BYTES = 8 * 1024 * 1024
"""The largest source file read (the biggest GOLEM-3DMCP module is under 100 KiB)."""

_SKIP_DIRS = frozenset(
    {".git", "__pycache__", "node_modules", ".venv", "venv", ".tox", "build", "dist"}
)
_SKIP_TEST_DIRS = frozenset({"tests", "test"})
FuncNode = Union[ast.FunctionDef, ast.AsyncFunctionDef]
METHOD_NAME = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)+$")
"""A dotted method name as GOLEM writes them (``geometry.create_box``)."""


@dataclass
class Module:
    """One parsed file: ``path`` relative to the root it was found under."""

    name: str
    path: str
    tree: ast.Module
    digest: str
    functions: dict[str, FuncNode] = field(default_factory=dict)
    imports: dict[str, tuple[str, str]] = field(default_factory=dict)
    """local name → (module, name in that module)"""


class SourceTree:
    """Every ``.py`` file under the given roots (tests, virtual environments and hidden
    directories left out).

    Each file is untrusted: only regular files are read (a FIFO, a device or a socket named
    ``x.py`` is never opened for reading, whatever symlink leads to it), at most
    `MAX_SOURCE_BYTES` of them, and a file that cannot be read or parsed (a dangling symlink, a
    symlink loop, a syntax error, nesting too deep for the parser, memory) costs that file
    only: it is listed in ``skipped`` and ``note`` is told why, in one line."""

    def __init__(self, roots: list[str], note: Optional[Callable[[str], None]] = None) -> None:
        self.modules: dict[str, Module] = {}
        self.by_path: dict[str, Module] = {}
        self.skipped: list[str] = []
        self._note = note or (lambda line: None)
        for root in roots:
            for file in _python_files(Path(root), self._note):
                self._add(Path(root), file)

    def _add(self, root: Path, file: Path) -> None:
        relative = file.relative_to(root).as_posix() if root.is_dir() else file.name
        try:
            data = _read_source(file)
            tree = ast.parse(data, filename=relative)
        except _Unreadable as exc:
            self._skip(relative, file, str(exc))
            return
        except SyntaxError as exc:
            where = f", line {exc.lineno}" if exc.lineno else ""
            self._skip(relative, file, f"not valid Python: {exc.msg}{where}")
            return
        except (MemoryError, RecursionError):
            self._skip(relative, file, "too deeply nested or too complex to parse")
            return
        except ValueError as exc:  # null bytes, an unknown encoding declaration
            self._skip(relative, file, f"cannot be parsed: {exc}")
            return
        module = Module(_dotted(file), relative, tree, "sha256:" + hashlib.sha256(data).hexdigest())
        package = module.name if file.name == "__init__.py" else module.name.rpartition(".")[0]
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                module.functions[node.name] = node
            elif isinstance(node, ast.ImportFrom):
                source = _absolute(node, package)
                for alias in node.names:
                    module.imports[alias.asname or alias.name] = (source, alias.name)
        # A later copy of the same dotted module (two vendored trees) keeps the first.
        self.modules.setdefault(module.name, module)
        self.by_path[relative] = module

    def _skip(self, relative: str, file: Path, why: str) -> None:
        self.skipped.append(relative)
        self._note(f"{file} skipped ({why})")

    def ref(self, module: Module, node: FuncNode) -> FunctionRef:
        """A function of ``module`` that resolves the names it calls."""
        return FunctionRef(node, module.path, lambda name: self.resolve(module, name))

    def resolve(self, module: Module, name: str, hops: int = 3) -> Optional[FunctionRef]:
        """The function ``name`` means in ``module``: its own, or one it imports (following
        re-exports a few hops). None when it is not in the scanned code."""
        node = module.functions.get(name)
        if node is not None:
            return self.ref(module, node)
        imported = module.imports.get(name)
        if imported is None or hops == 0:
            return None
        source = self.modules.get(imported[0])
        if source is None:
            return None
        return self.resolve(source, imported[1], hops - 1)


class _Unreadable(Exception):
    """A source file that is not read; the message says why."""


def _read_source(file: Path) -> bytes:
    """The bytes of ``file``. Raises _Unreadable when it is not a regular file, cannot be
    opened, or is over `MAX_SOURCE_BYTES`."""
    try:
        return read_regular(str(file), MAX_SOURCE_BYTES)
    except NotARegularFile as exc:
        raise _Unreadable(f"{exc.kind}, not a regular file") from None
    except FileTooLarge:
        raise _Unreadable(f"larger than {format_size(MAX_SOURCE_BYTES)}") from None
    except OSError as exc:
        raise _Unreadable(_open_failure(file, exc)) from None


def _open_failure(file: Path, exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return "a symbolic link loop"
    if exc.errno == errno.ENOENT and file.is_symlink():
        return "a dangling symbolic link"
    reason = exc.strerror or str(exc) or type(exc).__name__
    return reason[0].lower() + reason[1:]


def _python_files(root: Path, note: Callable[[str], None]) -> list[Path]:
    """The ``.py`` entries under ``root`` (any kind of file: `_read_source` decides), in the
    order a top-down walk with sorted names visits them. Iterative, so a tree nested deeper
    than Python's recursion limit is walked too (``os.walk`` recurses)."""
    if not root.is_dir():
        return [root] if root.suffix == ".py" else []
    found: list[Path] = []
    pending = [root]
    while pending:
        directory = pending.pop()
        try:
            with os.scandir(directory) as scan:
                entries = sorted(scan, key=lambda entry: entry.name)
        except OSError as exc:
            note(f"{directory} skipped ({_open_failure(directory, exc)})")
            continue
        below: list[Path] = []
        for entry in entries:
            path = Path(entry.path)
            if entry.is_dir(follow_symlinks=False):
                if not _left_out(entry.name):
                    below.append(path)
            elif _links_to_directory(entry):
                if not _left_out(entry.name):
                    # Not walked (a link may lead anywhere, or back up the tree): say so.
                    note(f"{path} skipped (a symbolic link to a directory)")
            elif entry.name.endswith(".py"):
                found.append(path)
        pending.extend(reversed(below))
    return found


def _links_to_directory(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:  # a link loop (ELOOP is not swallowed the way a dangling link is)
        return False


def _left_out(name: str) -> bool:
    return name in _SKIP_DIRS or name in _SKIP_TEST_DIRS or name.startswith(".")


def _dotted(file: Path) -> str:
    """The module name Python would import the file as: up through the enclosing packages."""
    parts = [] if file.name == "__init__.py" else [file.stem]
    directory = file.parent
    while (directory / "__init__.py").exists():
        parts.insert(0, directory.name)
        if directory.parent == directory:
            break
        directory = directory.parent
    return ".".join(parts)


def _absolute(node: ast.ImportFrom, package: str) -> str:
    if not node.level:
        return node.module or ""
    base = package.split(".") if package else []
    if node.level > 1:
        base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def git_commit(path: str) -> Optional[str]:
    """The commit checked out at ``path`` (or an enclosing directory), read from ``.git``
    without running git; None when there is no repository or HEAD cannot be read. The files
    of ``.git`` are as untrusted as the sources: only regular files are read, within a cap."""
    directory = Path(path).resolve()
    if directory.is_file():
        directory = directory.parent
    for candidate in (directory, *directory.parents):
        dot_git = candidate / ".git"
        if dot_git.is_file():  # a worktree: "gitdir: PATH"
            text = _git_text(dot_git)
            if text is not None and text.startswith("gitdir:"):
                return _head(Path(text[7:].strip()))
            return None
        if dot_git.is_dir():
            return _head(dot_git)
    return None


_GIT_TEXT_MAX = 16 * 1024 * 1024
"""packed-refs of a large repository runs to megabytes; nothing else in .git comes close."""


def _git_text(path: Path) -> Optional[str]:
    """The text of a file of ``.git``, stripped; None when it is missing, not a regular file
    (a FIFO would block the read forever), over `_GIT_TEXT_MAX`, or not readable."""
    try:
        data = read_regular(str(path), _GIT_TEXT_MAX)
    except (OSError, FileTooLarge):  # NotARegularFile included
        return None
    return data.decode("utf-8", errors="replace").strip()


def _head(git_dir: Path) -> Optional[str]:
    head = _git_text(git_dir / "HEAD")
    if head is None:
        return None
    if not head.startswith("ref:"):
        return _commit_id(head)
    ref = head[4:].strip()
    if not ref.startswith("refs/") or ".." in ref.split("/"):
        return None  # a ref outside .git/refs: nothing a checkout writes
    common = git_dir
    common_dir = _git_text(git_dir / "commondir")
    if common_dir is not None:
        common = (git_dir / common_dir).resolve()
    for base in (git_dir, common):
        commit = _git_text(base / ref)
        if commit is not None:
            return _commit_id(commit)
    packed = _git_text(common / "packed-refs")
    if packed is None:
        return None
    for line in packed.splitlines():
        sha, _, name = line.partition(" ")
        if name.strip() == ref:
            return _commit_id(sha)
    return None


_COMMIT_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


def _commit_id(text: str) -> Optional[str]:
    """``text`` when it is a commit id (SHA-1 or SHA-256 hex), else None: whatever else a
    hostile .git holds never reaches the catalogue."""
    return text if _COMMIT_ID.fullmatch(text) else None


def own_nodes(node: FuncNode) -> Iterator[ast.AST]:
    """The nodes of a function's body, nested function bodies left out."""
    stack: list[ast.AST] = list(node.body)
    while stack:
        child = stack.pop()
        yield child
        for grandchild in ast.iter_child_nodes(child):
            if not isinstance(grandchild, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                stack.append(grandchild)


def dict_keys(node: ast.Dict) -> set[str]:
    """The string keys a dict literal writes."""
    return {k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
