"""The CLI at 80 columns: `recipes`, `list` and every command's --help, rendered at that width
(it broke names and ids mid-word, showed `<bool>` placeholders and cut an option name)."""

from __future__ import annotations

import pytest
from rich.console import Console
from typer.testing import CliRunner

from jobs.cli import render
from jobs.cli.app import app
from jobs.recipes.catalogue import RECIPES

NARROW = {"COLUMNS": "80", "RAY_ADDRESS": None, "JOBS_DEBUG": None}
COMMANDS = [
    ["submit"],
    ["run"],
    ["export"],
    ["eval"],
    ["status"],
    ["logs"],
    ["stop"],
    ["list"],
    ["cost"],
    ["report"],
    ["recipes"],
    ["data", "gsm8k"],
    ["data", "code-contests"],
    ["data"],
    ["stage"],
    [],
]


def _lines(text: str) -> list[str]:
    return text.splitlines()


def test_recipes_fit_80_columns_with_every_name_and_default_whole():
    result = CliRunner().invoke(app, ["recipes"], env=NARROW)
    assert result.exit_code == 0, result.stderr
    lines = _lines(result.stdout)
    assert max(len(line) for line in lines) <= 80
    stripped = {line.strip() for line in lines}
    for recipe in RECIPES.values():
        assert any(line.startswith(f"{recipe.name}  {recipe.framework}") for line in lines)
        for key, value in recipe.defaults.items():
            if len(f"{key}={value}") <= 76:  # longer than a line can be: folded, not dropped
                assert f"{key}={value}" in stripped, key


def test_list_fits_80_columns_and_never_cuts_a_63_character_run_name():
    run = "r" * 63  # the longest name check_run_name accepts
    views = [
        {
            "run": run,
            "status": "RUNNING",
            "recipe": "nemo-rl-grpo-math-codelab",
            "attempts": [
                {"attempt": n, "submission_id": f"{run}-a{n}", "status": s}
                for n, s in ((1, "FAILED"), (2, "RUNNING"))
            ],
            "supervisor": {
                "submission_id": f"{run}-s1",
                "status": "RUNNING",
                "last_event": {"message": "restarting after a1 FAILED: " + "x " * 40},
            },
        }
    ]
    console = Console(width=80, record=True, file=open("/dev/null", "w"))
    console.print(render.runs(views))
    lines = _lines(console.export_text())
    assert max(len(line) for line in lines) <= 80
    assert any(f"{run}-a1" in line and "FAILED" in line for line in lines)
    assert any(f"{run}-a2" in line and "RUNNING" in line for line in lines)
    assert any(line.startswith(run) for line in lines)
    # The recipe is a detail of the run, indented under it: never a line that reads as a run.
    assert [line for line in lines if "nemo-rl-grpo-math-codelab" in line] == [
        "  recipe nemo-rl-grpo-math-codelab"
    ]


@pytest.mark.parametrize("words", COMMANDS, ids=lambda w: " ".join(w) or "jobs")
def test_help_reads_at_80_columns(words):
    result = CliRunner().invoke(app, [*words, "--help"], env=NARROW)
    assert result.exit_code == 0, result.stderr
    text = result.stdout
    assert max(len(line) for line in _lines(text)) <= 80
    assert "<bool>" not in text and "…" not in text
    # Command summaries are whole sentences, not cut with "...".
    assert not any(line.rstrip().endswith("...") and "Usage" not in line for line in _lines(text))


def test_submit_and_run_help_state_flags_choices_and_the_default_name():
    submit = CliRunner().invoke(app, ["submit", "--help"], env=NARROW).stdout
    assert "--allow-unsandboxed-reward" in submit
    assert "--framework nemo-rl|verl" in submit
    assert "RECIPE-YYYYMMDD-HHMMSS-mmmxx" in submit
    run = CliRunner().invoke(app, ["run", "--help"], env=NARROW).stdout
    assert "--gpus N" in run and "entrypoint_num_gpus" in run
    assert "--cpus N" in run and "--resource NAME=AMOUNT" in run
    assert "run --stack dev --gpus 1 -- nvidia-smi" in " ".join(run.split())


def _cost_report(run: str):
    from jobs.runs import cost

    hour = cost.Interval(0, 3_600_000)
    usage = cost.RunUsage(
        run,
        "nemo-rl-grpo-math",
        [cost.AttemptUsage(f"{run}-a1", 1, "SUCCEEDED", 1, hour)],
        gpu_hours=8.25,
    )
    return cost.CostReport(hour, [usage], 0.5, 40.0, "stack outputs")


def test_cost_fits_80_columns_with_a_63_character_run_name():
    """The table's header came out one letter a line beside a 63-character name."""
    from jobs.cli.cost import cost_view

    run = "r" * 63
    console = Console(width=80, record=True, file=open("/dev/null", "w"))
    console.print(cost_view(_cost_report(run), 80))
    lines = [line.rstrip() for line in _lines(console.export_text())]
    assert max(len(line) for line in lines) <= 80
    assert run in lines
    assert "  recipe nemo-rl-grpo-math  8.25 GPU-h (life)  1.00 node-h  $40.00" in lines
    assert "    a1 SUCCEEDED 1x1.00h" in lines
    assert "total: 1.50 node-h  $60.00" in lines
    assert all(len(line.strip()) > 1 for line in lines if line.strip())  # no letter a line


def test_cost_keeps_its_table_where_the_names_fit():
    from rich.table import Table

    from jobs.cli.cost import cost_view

    assert isinstance(cost_view(_cost_report("grpo-1"), 80), Table)
