"""The Python sources of a checkout, parsed once: modules by dotted name, their functions and
imports, and a resolver that follows a name to the function it means inside the scanned code.
Nothing is imported or run."""

from __future__ import annotations

import ast
import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Union

from .catalogue_values import FunctionRef

__all__ = ["Module", "SourceTree", "git_commit"]

_SKIP_DIRS = frozenset(
    {".git", "__pycache__", "node_modules", ".venv", "venv", ".tox", "build", "dist"}
)
_SKIP_TEST_DIRS = frozenset({"tests", "test"})
_FuncNode = Union[ast.FunctionDef, ast.AsyncFunctionDef]


@dataclass
class Module:
    """One parsed file: ``path`` relative to the root it was found under."""

    name: str
    path: str
    tree: ast.Module
    digest: str
    functions: dict[str, _FuncNode] = field(default_factory=dict)
    imports: dict[str, tuple[str, str]] = field(default_factory=dict)
    """local name → (module, name in that module)"""


class SourceTree:
    """Every ``.py`` file under the given roots (tests, virtual environments and hidden
    directories left out)."""

    def __init__(self, roots: list[str]) -> None:
        self.modules: dict[str, Module] = {}
        self.by_path: dict[str, Module] = {}
        self.skipped: list[str] = []
        for root in roots:
            for file in _python_files(Path(root)):
                self._add(Path(root), file)

    def _add(self, root: Path, file: Path) -> None:
        relative = file.relative_to(root).as_posix() if root.is_dir() else file.name
        data = file.read_bytes()
        try:
            tree = ast.parse(data, filename=relative)
        except (SyntaxError, ValueError):
            self.skipped.append(relative)
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

    def ref(self, module: Module, node: _FuncNode) -> FunctionRef:
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


def _python_files(root: Path) -> list[Path]:
    if root.is_file():
        return [root] if root.suffix == ".py" else []
    found: list[Path] = []
    for directory, dirs, files in os.walk(root):
        dirs[:] = sorted(
            d
            for d in dirs
            if d not in _SKIP_DIRS and d not in _SKIP_TEST_DIRS and not d.startswith(".")
        )
        found += [Path(directory) / f for f in sorted(files) if f.endswith(".py")]
    return found


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
    without running git; None when there is no repository or HEAD cannot be read."""
    directory = Path(path).resolve()
    if directory.is_file():
        directory = directory.parent
    for candidate in (directory, *directory.parents):
        dot_git = candidate / ".git"
        if dot_git.is_file():  # a worktree: "gitdir: PATH"
            text = dot_git.read_text(encoding="utf-8", errors="replace").strip()
            if text.startswith("gitdir:"):
                return _head(Path(text[7:].strip()))
            return None
        if dot_git.is_dir():
            return _head(dot_git)
    return None


def _head(git_dir: Path) -> Optional[str]:
    try:
        head = (git_dir / "HEAD").read_text(encoding="utf-8").strip()
    except OSError:
        return None
    if not head.startswith("ref:"):
        return head or None
    ref = head[4:].strip()
    common = git_dir
    common_file = git_dir / "commondir"
    if common_file.exists():
        common = (git_dir / common_file.read_text(encoding="utf-8").strip()).resolve()
    for base in (git_dir, common):
        try:
            return (base / ref).read_text(encoding="utf-8").strip() or None
        except OSError:
            continue
    try:
        packed = (common / "packed-refs").read_text(encoding="utf-8")
    except OSError:
        return None
    for line in packed.splitlines():
        sha, _, name = line.partition(" ")
        if name.strip() == ref:
            return sha
    return None
