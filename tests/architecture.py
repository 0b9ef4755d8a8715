"""The project's architecture whiteboard (docs/architecture.json) held against the real imports.

The file is in the whiteboard format the docs draw from: parts (each some files or folders),
arrows (part A imports part B today), nevers (part A must never import part B, and why).
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WHITEBOARD = REPO / "docs" / "architecture.json"
# The program's own code: what is deployed, shipped or run by users (tests and bench/ measure it).
PROGRAM_ROOTS = ("components", "jobs", "policy", "tools", "__main__.py")


@dataclass(frozen=True)
class Whiteboard:
    parts: dict[str, tuple[str, ...]]
    arrows: frozenset[tuple[str, str]]
    nevers: tuple[tuple[str, str, str], ...]
    raw: dict

    @classmethod
    def load(cls, path: Path = WHITEBOARD) -> Whiteboard:
        raw = json.loads(path.read_text())
        return cls(
            parts={name: tuple(p["is"]) for name, p in raw["parts"].items()},
            arrows=frozenset((a, b) for a, b in raw["arrows"]),
            nevers=tuple((a, b, why) for a, b, why in raw["never"]),
            raw=raw,
        )

    def part_of(self, rel: str) -> list[str]:
        """Every part whose files or folders hold `rel` (a path relative to the repository)."""
        return [
            name
            for name, places in self.parts.items()
            if any(rel == p or (p.endswith("/") and rel.startswith(p)) for p in places)
        ]


def program_modules() -> list[Path]:
    found: list[Path] = []
    for root in PROGRAM_ROOTS:
        path = REPO / root
        found += [path] if path.is_file() else sorted(path.rglob("*.py"))
    return [p for p in found if "__pycache__" not in p.parts]


def is_package_face(path: Path) -> bool:
    """An `__init__.py` that holds nothing but its docstring: no code, so no room of its own."""
    if path.name != "__init__.py":
        return False
    body = ast.parse(path.read_text()).body
    return all(isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant) for n in body)


def _module_file(dotted: str) -> Path | None:
    base = REPO.joinpath(*dotted.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def imported_files(path: Path) -> set[Path]:
    """The repository's files that `path` imports, at any depth (lazy imports count)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names |= {f"{node.module}.{a.name}" for a in node.names}
    return {f for f in map(_module_file, names) if f is not None and f != path}


def rel(path: Path) -> str:
    return path.relative_to(REPO).as_posix()


@cache
def part_imports(board_path: Path = WHITEBOARD) -> dict[tuple[str, str], list[str]]:
    """(part A, part B) -> the imports `file -> file` that make A depend on B."""
    board = Whiteboard.load(board_path)
    edges: dict[tuple[str, str], list[str]] = {}
    for path in program_modules():
        for source in board.part_of(rel(path)):
            for target_file in imported_files(path):
                for target in board.part_of(rel(target_file)):
                    if target != source:
                        edges.setdefault((source, target), []).append(
                            f"{rel(path)} -> {rel(target_file)}"
                        )
    return edges
