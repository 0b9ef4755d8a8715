"""What starting the CLI imports: `run`, `list`, `status` and `logs` start without the modules
only other commands use (each must stay under half of Ray's own `ray job` command, and
most of ours is Python start-up). Timing is measured in bench/submit_latency.py, not here."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.jobs.conftest import REPO

# Imported only by the command (or the option) that needs it.
DEFERRED = {
    # the stack outputs model: only with --stack (its own module, imported where a stack is read)
    "components.stack_outputs",
    # the port-forward: only with --stack
    "jobs.runs.portforward",
    # the recipe catalogue and what composes a recipe's config: submit, export, stage, recipes
    "jobs.recipes.catalogue",
    "jobs.recipes.compose",
    "jobs.recipes.prepare",
    "components.catalogue",
    "jobs.runs.recipe_run",
    "jobs.runs.resume",
    "jobs.runs.export",
    "jobs.runs.stage",
    # other commands' own modules: cost, report, checkpoints, list --runs-root, status's goodput
    "jobs.runs.cost",
    "jobs.runs.run_report",
    "jobs.runs.run_checkpoints",
    "jobs.runs.record_view",
    "jobs.runs.run_goodput",
    # list's and recipes' layout (a rich table)
    "jobs.cli.render",
    "rich.table",
}


def _loaded(code: str) -> set[str]:
    """The modules a fresh interpreter holds after `code`."""
    probe = f"{code}\nimport sys; print(' '.join(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return set(done.stdout.split())


def test_importing_the_cli_leaves_other_commands_modules_unimported():
    loaded = _loaded("import jobs.cli.app")
    # the probe did import every command's definition
    assert {"jobs.cli.submit", "jobs.cli.run", "jobs.cli.export", "jobs.cli.resume"} <= loaded
    assert sorted(DEFERRED & loaded) == []


# Each command as the benchmark runs it, at an address where nothing listens: it imports what
# it needs, fails to reach the cluster (exit 3), and must not have imported the rest.
COMMANDS = {
    "run": (["--name", "probe", "--", "true"], set()),
    "list": ([], {"jobs.cli.render", "rich.table"}),
    # status reads a run's goodput and, with --runs-root, its record
    "status": (["probe-a1"], {"jobs.runs.record_view", "jobs.runs.run_goodput"}),
    "logs": (["probe-a1"], set()),
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_each_command_imports_only_what_it_uses(command: str):
    args, own = COMMANDS[command]
    code = (
        "import sys\n"
        "from jobs.cli.app import app\n"
        f"try:\n    app([{command!r}, '--address', 'http://127.0.0.1:9', *{args!r}], prog_name='rl-jobs')\n"
        "except SystemExit as e:\n    assert e.code == 3, e.code  # unreachable, as intended"
    )
    assert sorted((DEFERRED - own) & _loaded(code)) == []


def test_the_stack_outputs_model_is_importable_and_the_contract_does_not_build_it():
    loaded = _loaded(
        "from components.stack_outputs import StackOutputs, export_stack_outputs\n"
        "assert StackOutputs.__name__ == 'StackOutputs' and callable(export_stack_outputs)"
    )
    assert "components.stack_outputs" in loaded
    assert "components.stack_outputs" not in _loaded("import components.contract")
