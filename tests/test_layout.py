"""The house's rules, read from the code: which room may import what, and how long a function may grow."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
JOBS = REPO / "jobs"
MAX_FUNCTION_LINES = 80


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
