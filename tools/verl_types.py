"""veRL 0.6.0's own config field types, read from the installed package's dataclasses (no import).

Each mapping of the composed `ppo_trainer` config that names a `_target_` dataclass
(`verl.workers.config.FSDPActorConfig`, `verl.workers.config.RolloutConfig`, ...) is built from
that class (`omega_conf_to_dataclass`, verl/utils/config.py); its annotated fields, bases
included, say which type each key takes. `import verl` pulls torch, so the classes are read
with `ast` from the package's source. `python -m tools.verl_snapshot` writes the result next to
the config snapshot (jobs/recipes/configs/verl-0.6.0/field_types.json); a test checks it equals a
live reading.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

_Classes = dict[str, list[tuple[Path, ast.ClassDef]]]


def _index(root: Path) -> _Classes:
    """Every class defined in the package, by name (names can repeat across modules)."""
    found: _Classes = {}
    for path in sorted(root.rglob("*.py")):
        try:
            tree = ast.parse(path.read_text(), str(path))
        except (SyntaxError, UnicodeDecodeError):
            continue
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                found.setdefault(node.name, []).append((path, node))
    return found


def _class(index: _Classes, root: Path, target: str) -> ast.ClassDef | None:
    """The class `target` names, preferring the one inside its module's own folder."""
    module, _, name = target.rpartition(".")
    candidates = index.get(name, [])
    where = root.parent / module.replace(".", "/")
    inside = [c for p, c in candidates if where in p.parents or p.with_suffix("") == where]
    chosen = inside or [c for _, c in candidates]
    return chosen[0] if len(chosen) >= 1 else None


def _fields(index: _Classes, root: Path, cls: ast.ClassDef, target: str) -> dict[str, str]:
    """Annotated fields of `cls` and its bases (a subclass's annotation wins)."""
    out: dict[str, str] = {}
    for base in cls.bases:
        name = ast.unparse(base).rpartition(".")[2]
        parent = _class(index, root, f"{target.rpartition('.')[0]}.{name}")
        if parent is not None and parent is not cls:
            out.update(_fields(index, root, parent, target))
    for node in cls.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            text = ast.unparse(node.annotation)
            if not node.target.id.startswith("_") and "ClassVar" not in text:
                out[node.target.id] = text
    return out


def field_types(config: Any, root: Path) -> dict[str, str]:
    """Dotted config key -> the annotation of the dataclass field it fills."""
    index = _index(root)
    out: dict[str, str] = {}

    def walk(node: Any, prefix: str) -> None:
        if not isinstance(node, dict):
            return
        target = node.get("_target_")
        if isinstance(target, str) and target.startswith("verl."):
            cls = _class(index, root, target)
            if cls is not None:
                for name, text in _fields(index, root, cls, target).items():
                    if name in node:
                        out[f"{prefix}{name}"] = text
        for key, value in node.items():
            walk(value, f"{prefix}{key}.")

    walk(config, "")
    return dict(sorted(out.items()))
