"""The house's rules, read from the code: which room may import what, and how long a function may grow.

docs/architecture.json is the house: every never holds in the real imports, every room is placed,
and the arrows drawn are the arrows the code has (the second half of this file)."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from tests.architecture import (
    WHITEBOARD,
    Whiteboard,
    imported_files,
    is_package_face,
    part_imports,
    program_modules,
    rel,
)

REPO = Path(__file__).resolve().parents[1]
JOBS = REPO / "jobs"
MAX_FUNCTION_LINES = 80
# A file a stranger can read in one sitting holds one concern; one past this many lines is holding
# more than one, and is split by concern.
MAX_FILE_LINES = 600


def _modules(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)


def _imports(path: Path) -> set[str]:
    """Every module a file imports, as dotted names (at any depth, lazily or not)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found |= {f"{node.module}.{a.name}" for a in node.names}
    return found


def _module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _closure(start: Path) -> set[str]:
    """The modules `start` reaches through this repository's own imports."""
    by_name = {_module_name(p): p for p in _modules(JOBS)}
    seen: set[str] = set()
    todo = [start]
    while todo:
        for name in _imports(todo.pop()):
            if name in seen:
                continue
            seen.add(name)
            if name in by_name:
                todo.append(by_name[name])
    return seen


def test_jobs_top_level_holds_only_its_entry_points():
    files = {p.name for p in JOBS.iterdir() if p.is_file()}
    assert files == {"__init__.py", "__main__.py"}


@pytest.mark.parametrize("path", _modules(JOBS), ids=lambda p: str(p.relative_to(REPO)))
def test_typer_and_rich_are_imported_only_by_the_cli(path):
    if path.is_relative_to(JOBS / "cli"):
        return
    ui = {n for n in _imports(path) if n.split(".")[0] in ("typer", "rich")}
    assert not ui, f"{path.relative_to(REPO)} imports {sorted(ui)}: only jobs/cli/ prints"


SHIPPED = [p for room in ("head", "rewards", "payloads", "staging") for p in _modules(JOBS / room)]


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(REPO)))
def test_code_shipped_to_the_cluster_reaches_no_cli_hydra_or_recipe_module(path):
    reached = _closure(path)
    bad = {
        n
        for n in reached
        if n.split(".")[0] in ("typer", "rich", "hydra", "omegaconf")
        or n.split(".")[:2] in (["jobs", "cli"], ["jobs", "recipes"], ["jobs", "runs"])
    }
    assert not bad, f"{path.relative_to(REPO)} reaches {sorted(bad)}"


def _long_functions(root: Path) -> list[str]:
    """Functions whose body (first statement to last line) is over the limit. The signature is
    not counted: a typer command declares each option there, one formatted line per argument."""
    out = []
    for path in _modules(root):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.body[0].lineno + 1
                if length > MAX_FUNCTION_LINES:
                    out.append(f"{path.relative_to(REPO)}:{node.lineno} {node.name} ({length})")
    return out


@pytest.mark.parametrize("room", ["jobs", "components", "policy", "tools"])
def test_no_function_is_longer_than_80_lines(room):
    assert _long_functions(REPO / room) == []


def _long_files(paths: list[Path]) -> list[str]:
    out = []
    for path in paths:
        lines = len(path.read_text().splitlines())
        if lines > MAX_FILE_LINES:
            out.append(f"{rel(path)} ({lines} lines)")
    return out


def test_no_file_of_the_program_is_longer_than_600_lines():
    long = _long_files(program_modules())
    assert not long, f"over {MAX_FILE_LINES} lines, split by concern: {long}"


# An issue number tells a reader nothing the reason would not, and means nothing once the tracker
# moves: a comment, docstring or message gives the reason itself, in the program and its tests.
ISSUE_REFERENCE = re.compile(r"\bissues?\s+#?[0-9]+", re.IGNORECASE)
PRODUCT_ROOTS = ("jobs", "components", "policy", "tools", "bench")


def _issue_references() -> list[str]:
    roots = (*PRODUCT_ROOTS, "tests")
    paths = [p for root in roots for p in _modules(REPO / root)] + [REPO / "__main__.py"]
    return [
        f"{rel(path)}:{number}"
        for path in paths
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if ISSUE_REFERENCE.search(line)
    ]


def test_no_file_names_an_issue_number():
    found = _issue_references()
    assert not found, f"say the reason, not the issue number: {found}"


# The team's notes beside the repository (../shared) are not in a clone: a test that reads them
# skips, or passes, in CI without checking anything. Vendored copies carry their digests instead.
SHARED_PATH = re.compile(r"""\.\./shared\b|parents?(\[\d+\])?\s*/\s*["']shared["']""")


def test_no_test_reads_the_notes_beside_the_repository():
    paths = [p for root in ("tests", "bench", "tools") for p in _modules(REPO / root)]
    found = [
        f"{rel(path)}:{number}"
        for path in paths
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if SHARED_PATH.search(line) and path != Path(__file__)
    ]
    assert not found, f"tests read ../shared: {found}"


def _import_cycles(paths: list[Path]) -> list[list[str]]:
    """One cycle per knot of mutually importing files, as `a, b, ..., a`. Every import counts,
    lazy, in a function or under TYPE_CHECKING: a cycle in the structure is one whatever the
    runtime makes of it."""
    graph = {rel(p): sorted(rel(f) for f in imported_files(p)) for p in paths}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    knots: list[list[str]] = []

    def connect(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph.get(node, []):
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            knot = []
            while not knot or knot[-1] != node:
                knot.append(stack.pop())
            if len(knot) > 1:
                knots.append(knot)

    for node in graph:
        if node not in index:
            connect(node)
    return [_cycle_through(sorted(knot), graph) for knot in knots]


def _cycle_through(knot: list[str], graph: dict[str, list[str]]) -> list[str]:
    """The shortest way from the knot's first file back to itself, staying inside the knot."""
    start, inside = knot[0], set(knot)
    paths = {nxt: [start, nxt] for nxt in graph[start] if nxt in inside}
    todo = list(paths)
    while start not in paths:
        node = todo.pop(0)
        for nxt in graph[node]:
            if nxt in inside and nxt not in paths:
                paths[nxt] = [*paths[node], nxt]
                todo.append(nxt)
    return paths[start]


def test_no_module_of_the_program_imports_itself_through_others():
    cycles = [" -> ".join(c) for c in _import_cycles(program_modules())]
    assert not cycles, f"import cycles (every import counts, lazy ones too): {cycles}"


def test_the_framework_names_are_the_catalogues_frameworks():
    from components.catalogue import FRAMEWORKS
    from components.contract import FRAMEWORK_NAMES

    assert set(FRAMEWORKS) == set(FRAMEWORK_NAMES)


def test_the_shipped_copy_of_nemo_rls_home_matches_the_recipes():
    # jobs/head/checkpoints.py runs on the cluster, where components/ is not shipped: it keeps
    # its own copy of where the image holds NeMo RL, which must stay the recipes' value.
    from jobs.head import checkpoints
    from jobs.recipes import catalogue

    assert checkpoints.NEMO_RL_HOME == catalogue.NEMO_RL_HOME


def test_the_shipped_sandbox_names_match_the_stacks():
    # jobs/rewards runs in trainer pods and the executor image, where components/ is not shipped.
    from components.contract import CODE_SANDBOX_TOKEN_ENV
    from jobs import rewards

    assert rewards.SANDBOX_TOKEN_ENV == CODE_SANDBOX_TOKEN_ENV


def _args_fields_naming_stack_config() -> list[str]:
    found = []
    for path in _modules(REPO / "components"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and node.name.endswith("Args"):
                for item in node.body:
                    if isinstance(item, ast.AnnAssign) and "StackConfig" in ast.unparse(
                        item.annotation
                    ):
                        found.append(
                            f"{path.relative_to(REPO)} {node.name}.{ast.unparse(item.target)}"
                        )
    return found


def test_no_component_args_holds_the_whole_stack_config():
    # A component's signature shows what it reads: narrow Args built by `for_stack(config)`.
    assert _args_fields_naming_stack_config() == []


def test_the_stage_jobs_copy_of_nemo_rls_home_matches_the_recipes():
    # jobs/staging/stage.py runs the conversion from NeMo RL's code directory on the cluster.
    from jobs.recipes.catalogue import NEMO_RL_HOME
    from jobs.staging.stage import NEMO_RL_HOME as STAGED

    assert STAGED == NEMO_RL_HOME


# ---------------------------------------------------------------- the architecture's picture

BOARD = Whiteboard.load()


@pytest.mark.parametrize("never", BOARD.nevers, ids=[f"{a}-never-{b}" for a, b, _ in BOARD.nevers])
def test_no_part_imports_what_the_architecture_says_it_never_may(never):
    source, target, why = never
    found = part_imports().get((source, target), [])
    assert not found, f"never {source} -> {target} ({why}), yet: {found}"


@pytest.mark.parametrize("path", program_modules(), ids=rel)
def test_every_module_of_the_program_sits_in_exactly_one_part(path):
    # A new file belongs to a room by where it is created (components/gcp/ for a GCP resource):
    # one that matches no part, or two, is a room nobody decided on.
    if is_package_face(path):
        return
    assert len(BOARD.part_of(rel(path))) == 1, (
        f"{rel(path)} is in parts {BOARD.part_of(rel(path))}; give it one in {rel(WHITEBOARD)}"
    )


def test_every_import_between_parts_is_drawn():
    undrawn = {f"{a} -> {b}": files[:3] for (a, b), files in part_imports().items()}
    for a, b in BOARD.arrows:
        undrawn.pop(f"{a} -> {b}", None)
    assert not undrawn, f"imports between parts that {rel(WHITEBOARD)} does not draw: {undrawn}"


def test_every_arrow_drawn_is_an_import_of_the_code():
    stale = sorted(f"{a} -> {b}" for a, b in BOARD.arrows if (a, b) not in part_imports())
    assert not stale, f"{rel(WHITEBOARD)} draws arrows no import makes: {stale}"


def test_the_whiteboard_keeps_the_drawable_format():
    # The same format as the team's whiteboard, so its picture can be drawn again for the docs:
    # a 6 x 8 grid, at most 16 parts and 30 nevers, one short ASCII line per part.
    raw = json.loads(WHITEBOARD.read_text())
    assert len(raw["parts"]) <= 16 and len(raw["never"]) <= 30
    cells = [tuple(p["at"]) for p in raw["parts"].values()]
    assert len(set(cells)) == len(cells)
    assert all(0 <= x < 6 and 0 <= y < 8 for x, y in cells)
    assert all(len(p["says"]) <= 60 and p["says"].isascii() for p in raw["parts"].values())
    named = set(raw["parts"])
    assert all({a, b} <= named for a, b in raw["arrows"])
    assert all({a, b} <= named for a, b, _ in raw["never"])


def test_a_forbidden_import_is_caught(tmp_path):
    """The checker itself: a board whose never the code breaks reports the file pair."""
    raw = json.loads(WHITEBOARD.read_text())
    raw["never"].append(["runs", "client", "a rule the code breaks, to see it caught"])
    board_file = tmp_path / "architecture.json"
    board_file.write_text(json.dumps(raw))
    edges = part_imports(board_file)
    assert any(f.startswith("jobs/runs/") for f in edges[("runs", "client")])
