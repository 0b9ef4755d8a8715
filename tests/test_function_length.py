"""The style rule "no function longer than 80 lines", held against the source tree by its AST."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 80
# The packages the rule covers so far; jobs/ joins once its reorganisation lands (issue 15).
PACKAGES = ("components", "policy", "tools")


def long_functions(source: str, max_lines: int = MAX_LINES) -> list[tuple[str, int]]:
    """(qualified name, lines) of every function or method in `source` longer than `max_lines`,
    counted from its `def` (decorators excluded) to its last line."""
    found: list[tuple[str, int]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    lines = (child.end_lineno or child.lineno) - child.lineno + 1
                    if lines > max_lines:
                        found.append((name, lines))
                visit(child, f"{name}.")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return found


def test_the_counter_finds_a_long_method_and_passes_a_short_one() -> None:
    body = "\n".join(f"        x{i} = {i}" for i in range(MAX_LINES))
    source = f"class A:\n    def long(self):\n{body}\n\n    def short(self):\n        return 1\n"
    assert long_functions(source) == [("A.long", MAX_LINES + 1)]


@pytest.mark.parametrize("package", PACKAGES)
def test_no_function_is_longer_than_80_lines(package: str) -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{name} ({lines} lines)"
        for path in sorted((ROOT / package).rglob("*.py"))
        for name, lines in long_functions(path.read_text())
    ]
    assert offenders == [], f"functions over {MAX_LINES} lines: {offenders}"
